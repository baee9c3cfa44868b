"""Usage as the upstream reported it, cache reads and writes in every client API's fields
(CONTRACT.md, "Prompt caching"), from every kind, stream and not: chat's
`prompt_tokens_details.cached_tokens` / `cache_write_tokens` (with `prompt_tokens` counting
both), Responses' `input_tokens_details` (`input_tokens` counting both), Messages'
`cache_read_input_tokens` / `cache_creation_input_tokens`; and the
`toolrelay_tokens_total{type="cache_read"|"cache_write"}` metric.

Every upstream reports 100 uncached input tokens, 2000 read from its cache and 400 written
(Gemini reports no writes: its caches are made apart from generation), and 50 output."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.helpers.bedrock_eventstream import event_frame
from tests.helpers.mock_upstream import Frame, anthropic_frames, openai_frames
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import ANTHROPIC_BASE, make_config, raw_config, serve
from tests.unit.translators.bedrock.converse import answer, events, text

GEMINI_BASE = "http://gemini.upstream.test"
BEDROCK_BASE = "http://bedrock.upstream.test"
READ, WRITE, UNCACHED, OUTPUT = 2000, 400, 100, 50
KINDS = ("openai", "anthropic", "gemini", "bedrock")


def writes(kind: str) -> int:
    return 0 if kind == "gemini" else WRITE


def openai_answer(stream: bool) -> bytes:
    usage = {
        "prompt_tokens": UNCACHED + READ + WRITE,
        "completion_tokens": OUTPUT,
        "total_tokens": UNCACHED + READ + WRITE + OUTPUT,
        "prompt_tokens_details": {"cached_tokens": READ, "cache_write_tokens": WRITE},
    }
    chunks = openai_text_chunks("Sunny.")
    if not stream:
        whole = {**chunks[0], "object": "chat.completion", "usage": usage}
        message = {"role": "assistant", "content": "Sunny.", "refusal": None}
        whole["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
        return json.dumps(whole).encode()
    usage_chunk = {**chunks[-1], "choices": [], "usage": usage}
    return b"".join(frame.encode() for frame in openai_frames([*chunks, usage_chunk]))


def anthropic_answer(stream: bool) -> bytes:
    usage = {
        "input_tokens": UNCACHED,
        "cache_read_input_tokens": READ,
        "cache_creation_input_tokens": WRITE,
        "output_tokens": OUTPUT,
    }
    whole = {
        "id": "msg_01Cache",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    if not stream:
        return json.dumps(whole).encode()
    start = whole | {"content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    stream_events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": OUTPUT},
        },
        {"type": "message_stop"},
    ]
    return b"".join(frame.encode() for frame in anthropic_frames(stream_events))


def gemini_answer(stream: bool) -> bytes:
    whole = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": UNCACHED + READ,
            "cachedContentTokenCount": READ,
            "candidatesTokenCount": OUTPUT,
            "totalTokenCount": UNCACHED + READ + OUTPUT,
        },
    }
    return Frame(whole).encode() if stream else json.dumps(whole).encode()


def bedrock_answer(stream: bool) -> bytes:
    usage = {
        "inputTokens": UNCACHED,
        "outputTokens": OUTPUT,
        "cacheReadInputTokens": READ,
        "cacheWriteInputTokens": WRITE,
        "totalTokens": UNCACHED + READ + WRITE + OUTPUT,
    }
    if not stream:
        return answer([text("Sunny.")], usage=usage)
    return b"".join(
        event_frame(str(event.event), event.data.encode())
        for event in events([text("Sunny.")], usage=usage)
    )


def upstream(request: httpx.Request) -> httpx.Response:
    url = str(request.url)
    body = json.loads(request.content)
    if "/chat/completions" in url:
        return httpx.Response(200, content=openai_answer(bool(body.get("stream"))))
    if url.startswith(ANTHROPIC_BASE):
        return httpx.Response(200, content=anthropic_answer(bool(body.get("stream"))))
    if url.startswith(GEMINI_BASE):
        return httpx.Response(200, content=gemini_answer("streamGenerateContent" in url))
    stream = url.endswith("/converse-stream")
    content_type = "application/vnd.amazon.eventstream" if stream else "application/json"
    return httpx.Response(
        200, content=bedrock_answer(stream), headers={"content-type": content_type}
    )


@pytest.fixture
async def proxy(anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"] |= {
        "gm": {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": "AIza-test"},
        "br": {"kind": "bedrock", "base_url": BEDROCK_BASE, "region": "us-east-1", "api_key": "k"},
    }
    raw["models"] += [
        {"name": "m-openai", "provider": "oa", "model": "gpt-4o"},
        {"name": "m-anthropic", "provider": "an", "model": "claude-sonnet-4-5"},
        {"name": "m-gemini", "provider": "gm", "model": "gemini-2.5-flash"},
        {"name": "m-bedrock", "provider": "br", "model": "anthropic.claude-sonnet-4-5-v1:0"},
    ]
    async with serve(make_config(raw), transport=httpx.MockTransport(upstream)) as client:
        yield client


def sse_events(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in body.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_chat_usage(proxy: httpx.AsyncClient, kind: str, stream: bool) -> None:
    body: dict[str, Any] = {"model": f"m-{kind}", "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    response = await proxy.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    usage = sse_events(response.content)[-1]["usage"] if stream else response.json()["usage"]
    assert usage["prompt_tokens"] == UNCACHED + READ + writes(kind)
    assert usage["completion_tokens"] == OUTPUT
    details = usage["prompt_tokens_details"]
    assert details["cached_tokens"] == READ
    assert details.get("cache_write_tokens", 0) == writes(kind)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_responses_usage(proxy: httpx.AsyncClient, kind: str, stream: bool) -> None:
    body = {"model": f"m-{kind}", "input": "hi", "stream": stream, "store": False}
    response = await proxy.post("/v1/responses", json=body)
    assert response.status_code == 200, response.text
    if stream:
        (completed,) = [
            e for e in sse_events(response.content) if e["type"] == "response.completed"
        ]
        usage = completed["response"]["usage"]
    else:
        usage = response.json()["usage"]
    assert usage["input_tokens"] == UNCACHED + READ + writes(kind)
    assert usage["output_tokens"] == OUTPUT
    assert usage["input_tokens_details"]["cached_tokens"] == READ
    assert usage["input_tokens_details"].get("cache_write_tokens", 0) == writes(kind)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_messages_usage(proxy: httpx.AsyncClient, kind: str, stream: bool) -> None:
    body = {
        "model": f"m-{kind}",
        "max_tokens": 100,
        "stream": stream,
        "messages": [{"role": "user", "content": "hi"}],
    }
    response = await proxy.post("/v1/messages", json=body)
    assert response.status_code == 200, response.text
    if stream:
        usage: dict[str, Any] = {}
        for event in sse_events(response.content):
            if event["type"] == "message_start":
                usage |= event["message"]["usage"]
            elif event["type"] == "message_delta":
                usage |= event["usage"]
    else:
        usage = response.json()["usage"]
    assert usage["input_tokens"] == UNCACHED
    assert usage["output_tokens"] == OUTPUT
    assert usage["cache_read_input_tokens"] == READ
    assert usage.get("cache_creation_input_tokens", 0) == writes(kind)


FACES = {
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"input": "hi", "store": False}),
    "messages": (
        "/v1/messages",
        {"max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
    ),
}


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("kind", KINDS)
async def test_the_metric_counts_cache_reads_and_writes(
    proxy: httpx.AsyncClient, kind: str, face: str
) -> None:
    def tokens(exposition: str, token_type: str) -> float:
        for line in exposition.splitlines():
            labels = (f'model="m-{kind}"', f'type="{token_type}"')
            if line.startswith("toolrelay_tokens_total{") and all(x in line for x in labels):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {token_type} series for m-{kind}")

    before = (await proxy.get("/metrics")).text
    assert tokens(before, "cache_read") == tokens(before, "cache_write") == 0
    path, body = FACES[face]
    assert (await proxy.post(path, json={"model": f"m-{kind}", **body})).status_code == 200
    after = (await proxy.get("/metrics")).text
    assert tokens(after, "cache_read") == READ
    assert tokens(after, "cache_write") == writes(kind)
    assert tokens(after, "prompt") == UNCACHED + READ + writes(kind)
