"""Proxy errors in Anthropic's shape: the status and type its SDKs retry on, and the body."""

from __future__ import annotations

import orjson
import pytest

from app.errors import (
    InvalidRequest,
    ProxyError,
    Redactor,
    UpstreamStatusError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from app.faces.messages.errors import anthropic_error_json, anthropic_error_type, anthropic_status


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (402, "billing_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
        (409, "invalid_request_error"),
        (503, "api_error"),
    ],
)
def test_error_type_by_status(status: int, expected: str) -> None:
    assert anthropic_error_type(status) == expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (InvalidRequest("bad"), 400),
        (UpstreamTimeout("slow"), 504),
        (UpstreamUnavailable("down"), 502),
        (UpstreamStatusError(401, "key"), 401),
        (UpstreamStatusError(429, "slow down"), 429),
        (UpstreamStatusError(500, "oops"), 502),
        (UpstreamStatusError(529, "Overloaded"), 529),
        (UpstreamStatusError(503, "busy"), 529),
        (UpstreamStatusError(500, "Overloaded", type="overloaded_error"), 529),
        (UpstreamStatusError(400, "Overloaded", type="overloaded_error"), 529),
    ],
    ids=[
        "invalid-request",
        "timeout",
        "unavailable",
        "upstream-401",
        "upstream-429",
        "upstream-500",
        "upstream-529",
        "upstream-503",
        "overloaded-type-on-500",
        "overloaded-type-on-400",
    ],
)
def test_status(error: ProxyError, expected: int) -> None:
    assert anthropic_status(error) == expected


@pytest.mark.parametrize(
    ("error", "expected_type"),
    [
        (InvalidRequest("bad field"), "invalid_request_error"),
        (UpstreamTimeout("bad field"), "timeout_error"),
        (UpstreamUnavailable("bad field"), "api_error"),
        (UpstreamStatusError(529, "bad field"), "overloaded_error"),
        (UpstreamStatusError(403, "bad field"), "permission_error"),
    ],
    ids=["invalid-request", "timeout", "unavailable", "overloaded", "forbidden"],
)
def test_body_shape(error: ProxyError, expected_type: str) -> None:
    assert orjson.loads(anthropic_error_json(error)) == {
        "type": "error",
        "error": {"type": expected_type, "message": "bad field"},
    }


def test_redactor_is_applied_to_the_message() -> None:
    error = UpstreamStatusError(401, "invalid key sk-secret-123 given")
    body = orjson.loads(anthropic_error_json(error, Redactor(["sk-secret-123"])))
    assert body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid key <redacted> given"},
    }
