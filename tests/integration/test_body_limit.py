"""`server.max_body_mb` on every API the proxy reads (CONTRACT.md, "Limits on what a client
sends"; issue 29 item 5): a body past the limit is a 413 in the path's API shape, answered as
soon as the limit is passed (the rest of the body is never pulled from the client), and a
Content-Length past it is refused before anything is read. A body of exactly the limit works.
The demo kind answers, so nothing here needs an upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from app.config import ConfigError
from tests.integration.conftest import assert_error, make_config, raw_config, serve

pytestmark = pytest.mark.anyio

LIMIT = 1 << 20  # max_body_mb: 1
PIECE = 1 << 18
USER = [{"role": "user", "content": "hello"}]
BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": "demo", "messages": USER},
    "/v1/responses": {"model": "demo", "input": "hello"},
    "/v1/responses/input_tokens": {"model": "demo", "input": "hello"},
    "/v1/messages": {"model": "demo", "max_tokens": 64, "messages": USER},
    "/v1/messages/count_tokens": {"model": "demo", "messages": USER},
    "/v1/embeddings": {"model": "demo", "input": "hello"},
}
PATHS = list(BODIES)


class Pulled:
    """A request body of `pieces` PIECE-byte pieces that counts how many the proxy pulled."""

    def __init__(self, pieces: int) -> None:
        self.pieces = pieces
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.pieces):
            self.pulled += 1
            yield b" " * PIECE


@pytest.fixture
async def proxy(anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["server"]["max_body_mb"] = 1
    async with serve(make_config(raw)) as client:
        yield client


def padded(path: str, size: int) -> bytes:
    """The path's body, padded with trailing JSON whitespace to exactly `size` bytes."""
    body = orjson.dumps(BODIES[path])
    return body + b" " * (size - len(body))


def assert_too_large(path: str, response: httpx.Response) -> None:
    if path.startswith("/v1/messages"):
        assert response.status_code == 413, response.text
        body = response.json()
        assert body["type"] == "error"
        assert body["error"]["type"] == "request_too_large"
        message = body["error"]["message"]
    else:
        error = assert_error(response, 413)
        assert error["type"] == "invalid_request_error"
        assert error["code"] == "request_too_large"
        message = error["message"]
    assert "1 MB" in message
    assert "server.max_body_mb" in message


@pytest.mark.parametrize("path", PATHS)
async def test_a_streamed_body_past_the_limit_is_refused_without_reading_the_rest(
    proxy: httpx.AsyncClient, path: str
) -> None:
    body = Pulled(pieces=40)  # 10 MiB

    response = await proxy.post(path, content=body)

    assert_too_large(path, response)
    assert body.pulled == LIMIT // PIECE + 1  # the piece that passed the limit, no more


@pytest.mark.parametrize("path", PATHS)
async def test_a_content_length_past_the_limit_is_refused_before_reading(
    proxy: httpx.AsyncClient, path: str
) -> None:
    body = Pulled(pieces=8)

    response = await proxy.post(path, content=body, headers={"content-length": str(8 * PIECE)})

    assert_too_large(path, response)
    assert body.pulled == 0


@pytest.mark.parametrize("path", PATHS)
async def test_one_byte_past_the_limit_is_refused(proxy: httpx.AsyncClient, path: str) -> None:
    response = await proxy.post(path, content=padded(path, LIMIT + 1))

    assert_too_large(path, response)


@pytest.mark.parametrize("path", PATHS)
async def test_a_body_of_exactly_the_limit_is_served(proxy: httpx.AsyncClient, path: str) -> None:
    response = await proxy.post(path, content=padded(path, LIMIT))

    assert response.status_code == 200, response.text


async def test_the_default_limit_is_32_mib() -> None:
    assert make_config().server.max_body_bytes == 32 << 20


def _raw_with(value: object) -> dict[str, Any]:
    raw = raw_config()
    raw["server"]["max_body_mb"] = value
    return raw


BAD_VALUES: dict[str, object] = {
    "string": "lots",
    "negative": -1,
    "zero": 0,
    "list": [32],
    "mapping": {"mb": 32},
    "boolean": True,
    "null": None,
    "infinite": "inf",
}


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
async def test_a_bad_max_body_mb_is_a_config_error_naming_the_key(value: object) -> None:
    with pytest.raises(ConfigError) as refused:
        make_config(_raw_with(value))

    assert "server.max_body_mb" in str(refused.value)
    assert "\n" not in str(refused.value)
