"""The ASGI app in-process behind httpx.ASGITransport, its lifespan running, with upstreams played
by respx or by the real mock server; every response and log line is checked for secrets."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import respx

from app.config import Config, parse_config
from app.main import create_app
from app.ops.tracing import Tracing
from tests.conformance.spec import check_http_answer
from tests.helpers.mock_upstream import Frame, MockUpstream

PROVIDER_KEY = "sk-test-SECRET-123"
ANTHROPIC_KEY = "sk-ant-test-SECRET-789"
CLIENT_KEY = "client-key-SECRET-456"
GEMINI_KEY = "AIza-test-SECRET-321"
SECRETS = (PROVIDER_KEY, ANTHROPIC_KEY, CLIENT_KEY, GEMINI_KEY)

OPENAI_BASE = "http://openai.upstream.test/v1"
OPENAI_URL = f"{OPENAI_BASE}/chat/completions"
ANTHROPIC_BASE = "http://anthropic.upstream.test"
ANTHROPIC_URL = f"{ANTHROPIC_BASE}/v1/messages"

USER = [{"role": "user", "content": "What's the weather in Paris?"}]


def raw_config(
    openai_base: str = OPENAI_BASE, anthropic_base: str = ANTHROPIC_BASE
) -> dict[str, Any]:
    """A config.yaml as a dict, for tests to adjust before `make_config`. One attempt per
    request: the tests of retries and fallbacks (test_resilience.py) set their own."""
    return {
        "server": {"api_keys": [CLIENT_KEY]},
        "router": {"retries": 0},
        "providers": {
            "oa": {"kind": "openai", "base_url": openai_base, "api_key": PROVIDER_KEY},
            "an": {"kind": "anthropic", "base_url": anthropic_base, "api_key": ANTHROPIC_KEY},
            "demo": {"kind": "demo"},
        },
        "models": [
            {"name": "mini", "provider": "oa", "model": "gpt-4o-mini"},
            {"name": "oa/pinned", "provider": "oa", "model": "gpt-4o-2024-08-06"},
            {"name": "claude", "provider": "an", "model": "claude-sonnet-4-5", "max_tokens": 4096},
            {"name": "demo", "provider": "demo", "model": "demo"},
        ],
    }


def make_config(raw: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> Config:
    return parse_config(copy.deepcopy(raw or raw_config()), "test-config.yaml", environ or {})


def assert_no_secrets(response: httpx.Response) -> None:
    headers = "\n".join(f"{name}: {value}" for name, value in response.headers.multi_items())
    seen = response.content.decode("utf-8", "replace") + "\n" + headers
    for secret in SECRETS:
        assert secret not in seen, f"a configured secret leaked in a response: {seen[:400]}"


async def _check_response(response: httpx.Response) -> None:
    """Every answer: no secret in it, and an OpenAI face's answer as OpenAI's spec has it."""
    await response.aread()
    assert_no_secrets(response)
    request = response.request
    media_type = response.headers.get("content-type", "")
    check_http_answer(
        request.method, request.url.path, response.status_code, media_type, response.content
    )


@asynccontextmanager
async def serve(
    config: Config,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    client_key: str | None = CLIENT_KEY,
    tracing: Tracing | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    """The proxy with its lifespan running, and a client for it (sending `client_key`)."""
    app = create_app(config, transport=transport, tracing=tracing)
    headers = {"authorization": f"Bearer {client_key}"} if client_key else {}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://toolrelay.test",
            headers=headers,
            event_hooks={"response": [_check_response]},
        ) as client,
    ):
        yield client


def assert_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """OpenAI's error shape with the given status; returns the inner error object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["type"], str)
    return dict(error)


def chat(model: str = "mini", **fields: Any) -> dict[str, Any]:
    return {"model": model, "messages": USER, **fields}


def sse_bytes(frames: list[Frame]) -> bytes:
    return b"".join(frame.encode() for frame in frames)


class Pieces(httpx.AsyncByteStream):
    """An upstream body delivered in the given pieces, then optionally a transport failure."""

    def __init__(self, pieces: list[bytes], error: Exception | None = None) -> None:
        self.pieces = pieces
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        if self.error is not None:
            raise self.error


def sse_response(
    frames: list[Frame], *, piece_size: int | None = None, error: Exception | None = None
) -> httpx.Response:
    """An SSE answer, one frame per read unless `piece_size` cuts the bytes evenly instead."""
    if piece_size is None:
        pieces = [frame.encode() for frame in frames]
    else:
        body = sse_bytes(frames)
        pieces = [body[i : i + piece_size] for i in range(0, len(body), piece_size)]
    headers = {"content-type": "text/event-stream"}
    return httpx.Response(200, headers=headers, stream=Pieces(pieces, error))


def sent_json(route: respx.Route) -> Any:
    return json.loads(route.calls.last.request.content)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_secrets_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    formatter = logging.Formatter()  # with the traceback, when a record has one
    records = caplog.get_records("setup") + caplog.get_records("call") + caplog.records
    logged = "\n".join(formatter.format(record) for record in records)
    for secret in SECRETS:
        assert secret not in logged, "a configured secret leaked into the logs"


@pytest.fixture
def upstream() -> respx.Router:
    return respx.Router(assert_all_mocked=True)


@pytest.fixture
async def proxy(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(
        make_config(), transport=httpx.MockTransport(upstream.async_handler)
    ) as client:
        yield client


@pytest.fixture
def mock_upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server
