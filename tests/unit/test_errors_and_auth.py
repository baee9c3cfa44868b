"""Error classification and rendering, secret redaction, and client-key checks."""

from __future__ import annotations

import orjson
import pytest

from app.api.auth import client_key
from app.errors import AuthenticationFailed, Redactor, UpstreamStatusError, error_json
from app.ops.keys import KeyRing
from app.server_config import ServerConfig


@pytest.mark.parametrize(
    ("upstream_status", "status", "error_type", "retryable"),
    [
        (400, 400, "invalid_request_error", False),
        (401, 401, "authentication_error", False),
        (404, 404, "not_found_error", False),
        (408, 408, "timeout_error", True),
        (422, 422, "invalid_request_error", False),
        (429, 429, "rate_limit_error", True),
        (500, 502, "api_error", True),
        (503, 502, "api_error", True),
        (529, 502, "api_error", True),
        (501, 502, "api_error", False),
    ],
)
def test_upstream_status_mapping(
    upstream_status: int, status: int, error_type: str, retryable: bool
) -> None:
    error = UpstreamStatusError(upstream_status, "upstream says no")
    assert (error.status, error.type, error.retryable) == (status, error_type, retryable)
    assert orjson.loads(error_json(error)) == {
        "error": {"message": "upstream says no", "type": error_type, "param": None, "code": None}
    }


def test_redactor_removes_every_secret_longest_first() -> None:
    redact = Redactor(["sk-abc", "sk-abcdef", "", "ab"])
    assert redact("keys sk-abcdef and sk-abc") == "keys <redacted> and <redacted>"
    assert redact("short ab stays") == "short ab stays"


KEYS = KeyRing(ServerConfig(api_keys=["key-one"], keys=[{"name": "two", "key": "key-two"}]))


@pytest.mark.parametrize(
    ("header", "name"),
    [(b"Bearer key-one", "default"), (b"bearer key-two", "two"), (b"Bearer  key-one ", "default")],
)
def test_accepted_client_keys(header: bytes, name: str) -> None:
    assert client_key(KEYS, header, None).name == name


def test_x_api_key_is_taken_before_the_bearer_token() -> None:
    assert client_key(KEYS, b"Bearer key-one", b"key-two").name == "two"


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "missing_api_key"),
        (b"Bearer wrong", "invalid_api_key"),
        (b"Basic key-one", "invalid_api_key"),
        (b"key-one", "invalid_api_key"),
        (b"Bearer key-on", "invalid_api_key"),
        (b"Bearer ", "invalid_api_key"),
    ],
)
def test_rejected_client_keys(header: bytes | None, code: str) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        client_key(KEYS, header, None)
    assert (caught.value.status, caught.value.code) == (401, code)
    assert "key-one" not in caught.value.message
