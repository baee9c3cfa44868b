"""Configured keys never reach a client or a log line, even when an upstream echoes them back.
(Every response in this directory is also checked by conftest's hook, every log by its fixture.)"""

from __future__ import annotations

import httpx
import pytest
import respx

from tests.helpers.mock_upstream import Frame, openai_frames
from tests.helpers.openai_stream import parse_sse_body
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import (
    CLIENT_KEY,
    OPENAI_URL,
    PROVIDER_KEY,
    SECRETS,
    assert_error,
    chat,
    sse_response,
)

pytestmark = pytest.mark.anyio

ECHO = f"Incorrect API key provided: {PROVIDER_KEY}. Client said {CLIENT_KEY}."


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_upstream_error_echoing_the_key_is_redacted(
    proxy: httpx.AsyncClient, upstream: respx.Router, stream: bool
) -> None:
    upstream.post(OPENAI_URL).respond(401, json={"error": {"message": ECHO}})

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    error = assert_error(response, 502)  # the upstream refused ToolRelay's own key
    assert "Incorrect API key provided" in error["message"]
    for secret in SECRETS:
        assert secret not in response.text


@pytest.mark.parametrize("field", ["param", "code", "type"])
async def test_upstream_error_echoing_the_key_in_any_field_is_redacted(
    proxy: httpx.AsyncClient, upstream: respx.Router, field: str
) -> None:
    upstream_error = {"message": "Bad request.", field: f"key={PROVIDER_KEY}"}
    upstream.post(OPENAI_URL).respond(400, json={"error": upstream_error})

    response = await proxy.post("/v1/chat/completions", json=chat())

    assert_error(response, 400)
    assert PROVIDER_KEY not in response.text


async def test_mid_stream_error_echoing_the_key_is_redacted(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = [
        *openai_frames(openai_text_chunks("a"), done=False)[:2],
        Frame({"error": {"message": ECHO}}),
    ]
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True))

    chunks, _ = parse_sse_body(response.content)
    assert "Incorrect API key provided" in chunks[-1]["error"]["message"]
    for secret in SECRETS:
        assert secret not in response.text


async def test_unknown_model_named_like_a_key_is_redacted(proxy: httpx.AsyncClient) -> None:
    response = await proxy.post("/v1/chat/completions", json=chat(PROVIDER_KEY))

    assert_error(response, 404)
    assert PROVIDER_KEY not in response.text


async def test_exception_mentioning_the_key_leaks_it_neither_to_client_nor_log(
    proxy: httpx.AsyncClient, upstream: respx.Router, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.post(OPENAI_URL).mock(side_effect=ValueError(f"bad header: Bearer {PROVIDER_KEY}"))

    response = await proxy.post("/v1/chat/completions", json=chat())

    assert_error(response, 500)
    assert PROVIDER_KEY not in response.text
    assert PROVIDER_KEY not in caplog.text
