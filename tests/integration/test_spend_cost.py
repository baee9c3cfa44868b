"""The cost of every answer (CONTRACT.md, "Spend: prices, cost, budgets") through the whole app:
`usage.cost` in chat, the stream's usage chunk, Responses, Messages and embeddings, on each kind,
`x-toolrelay-cost`, the log line's `cost_usd` and toolrelay_spend_usd_total; an unpriced model's
answers carry none. Every expected cost is worked out here from the formula: uncached prompt x
input + cache reads x cache_read + cache writes x cache_write + completion x output."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from app.ops.logs import FIELDS
from tests.helpers.mock_bedrock import API_KEY as BEDROCK_KEY
from tests.helpers.mock_bedrock import MockBedrock, converse_answer, converse_stream
from tests.helpers.mock_gemini import MockGemini, gemini_path
from tests.helpers.mock_upstream import Frame, Reply, anthropic_frames, openai_frames
from tests.helpers.openai_stream import parse_sse_body
from tests.integration.conftest import (
    ANTHROPIC_URL,
    GEMINI_KEY,
    OPENAI_BASE,
    OPENAI_URL,
    USER,
    make_config,
    raw_config,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

EXCERPT = Path(__file__).parents[1] / "unit" / "spend" / "litellm_prices_excerpt.json"

# claude: 3 / 15 / 0.3 / 3.75 USD per million. 100 uncached + 2000 read + 400 written, 50 out:
# 100 x 3e-6 + 2000 x 0.3e-6 + 400 x 3.75e-6 + 50 x 15e-6 = 0.0003 + 0.0006 + 0.0015 + 0.00075
ANTHROPIC_USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 2000,
    "cache_creation_input_tokens": 400,
    "output_tokens": 50,
}
CLAUDE_COST = 0.00315
# mini = gpt-4o-mini from LiteLLM's file: 1.5e-7 in, 6e-7 out, 7.5e-8 cache read.
# 1000 prompt (200 cached), 100 completion: 800 x 1.5e-7 + 200 x 7.5e-8 + 100 x 6e-7
OPENAI_USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "total_tokens": 1100,
    "prompt_tokens_details": {"cached_tokens": 200},
}
MINI_COST = 0.000195


def _raw() -> dict[str, Any]:
    raw = raw_config()
    raw["server"]["spend"] = {"prices": str(EXCERPT)}
    for model in raw["models"]:
        if model["name"] == "claude":
            model["price"] = {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}
    raw["models"].append({"name": "embed", "provider": "oa", "model": "text-embedding-3-small"})
    return raw


@pytest.fixture
async def priced(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(_raw()), transport=transport) as client:
        yield client


def _completion(model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Sunny."},
                "finish_reason": "stop",
            }
        ],
        "usage": copy.deepcopy(usage),
    }


def _chunks(model: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model}
    delta = {"role": "assistant", "content": "Sunny."}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": copy.deepcopy(usage)},
    ]


def _message() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": dict(ANTHROPIC_USAGE),
    }


def _message_frames() -> list[Frame]:
    start = {**_message(), "content": [], "stop_reason": None}
    start["usage"] = {**ANTHROPIC_USAGE, "output_tokens": 1}
    return anthropic_frames(
        [
            {"type": "message_start", "message": start},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Sunny."},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
            {"type": "message_stop"},
        ]
    )


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")
    ]


async def test_chat_non_stream_openai_kind_priced_from_the_file(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(OPENAI_URL).mock(
        return_value=httpx.Response(200, json=_completion("gpt-4o-mini", OPENAI_USAGE))
    )
    response = await priced.post("/v1/chat/completions", json={"model": "mini", "messages": USER})
    assert response.json()["usage"]["cost"] == MINI_COST
    assert response.headers["x-toolrelay-cost"] == "0.000195"


async def test_chat_stream_usage_chunk_carries_the_cost_and_nothing_else_changes(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    """The same upstream stream through a priced model (mini) and an unpriced one (oa/pinned):
    the client's bytes differ only in `model` and the usage chunk's `cost`."""
    body = {"messages": USER, "stream": True, "stream_options": {"include_usage": True}}
    texts: dict[str, bytes] = {}
    for model, upstream_model in (("mini", "gpt-4o-mini"), ("oa/pinned", "gpt-4o-2024-08-06")):
        frames = openai_frames(_chunks(upstream_model, OPENAI_USAGE))
        upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))
        response = await priced.post("/v1/chat/completions", json={**body, "model": model})
        assert "x-toolrelay-cost" not in response.headers
        texts[model] = response.content
    usage = parse_sse_body(texts["mini"])[0][-1]["usage"]
    assert usage["cost"] == MINI_COST
    assert "cost" not in parse_sse_body(texts["oa/pinned"])[0][-1]["usage"]
    unpriced = texts["oa/pinned"].replace(b'"model":"oa/pinned"', b'"model":"mini"')
    assert texts["mini"].replace(b',"cost":0.000195', b"") == unpriced


async def test_unpriced_model_answers_carry_no_cost(
    priced: httpx.AsyncClient, upstream: respx.Router, caplog: pytest.LogCaptureFixture
) -> None:
    completion = _completion("gpt-4o-2024-08-06", OPENAI_USAGE)
    upstream.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=completion))
    with caplog.at_level(logging.INFO, logger="toolrelay.http"):
        response = await priced.post(
            "/v1/chat/completions", json={"model": "oa/pinned", "messages": USER}
        )
    assert "cost" not in response.json()["usage"]
    assert "x-toolrelay-cost" not in response.headers
    fields = [getattr(r, FIELDS) for r in caplog.records if hasattr(r, FIELDS)]
    assert fields[-1]["cost_usd"] is None
    metrics = (await priced.get("/metrics")).text
    assert 'toolrelay_spend_usd_total{key="default",model="oa/pinned"' not in metrics


async def test_anthropic_kind_cache_reads_and_writes_non_stream_log_and_metric(
    priced: httpx.AsyncClient, upstream: respx.Router, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=_message()))
    with caplog.at_level(logging.INFO, logger="toolrelay.http"):
        response = await priced.post(
            "/v1/chat/completions", json={"model": "claude", "messages": USER}
        )
    usage = response.json()["usage"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 2000, "cache_write_tokens": 400}
    assert usage["cost"] == CLAUDE_COST
    assert response.headers["x-toolrelay-cost"] == "0.00315"
    fields = [getattr(r, FIELDS) for r in caplog.records if hasattr(r, FIELDS)]
    assert fields[-1]["cost_usd"] == CLAUDE_COST
    metrics = (await priced.get("/metrics")).text
    assert (
        'toolrelay_spend_usd_total{key="default",model="claude",provider="an"} 0.00315' in metrics
    )


async def test_anthropic_kind_stream_usage_chunk(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(_message_frames()))
    body = {
        "model": "claude",
        "messages": USER,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    response = await priced.post("/v1/chat/completions", json=body)
    assert parse_sse_body(response.content)[0][-1]["usage"]["cost"] == CLAUDE_COST


async def test_responses_api_non_stream_and_completed_event(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=_message()))
    response = await priced.post("/v1/responses", json={"model": "claude", "input": "hi"})
    usage = response.json()["usage"]
    assert usage["input_tokens_details"] == {"cached_tokens": 2000, "cache_write_tokens": 400}
    assert usage["cost"] == CLAUDE_COST
    assert response.headers["x-toolrelay-cost"] == "0.00315"
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(_message_frames()))
    streamed = await priced.post(
        "/v1/responses", json={"model": "claude", "input": "hi", "stream": True}
    )
    completed = [e for e in _events(streamed) if e.get("type") == "response.completed"]
    assert completed[0]["response"]["usage"]["cost"] == CLAUDE_COST


async def test_messages_api_native_and_translated(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    body = {"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    upstream.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=_message()))
    native = await priced.post("/v1/messages", json=body)
    assert native.json()["usage"]["cost"] == CLAUDE_COST
    assert native.headers["x-toolrelay-cost"] == "0.00315"
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(_message_frames()))
    streamed = await priced.post("/v1/messages", json={**body, "stream": True})
    delta = [e for e in _events(streamed) if e.get("type") == "message_delta"]
    assert delta[0]["usage"]["cost"] == CLAUDE_COST
    # translated: a Messages client on the openai kind
    completion = _completion("gpt-4o-mini", OPENAI_USAGE)
    upstream.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=completion))
    translated = await priced.post("/v1/messages", json={**body, "model": "mini"})
    usage = translated.json()["usage"]
    assert usage == {
        "input_tokens": 800,
        "output_tokens": 100,
        "cache_read_input_tokens": 200,
        "cost": MINI_COST,
    }
    upstream.post(OPENAI_URL).mock(
        return_value=sse_response(openai_frames(_chunks("gpt-4o-mini", OPENAI_USAGE)))
    )
    streamed = await priced.post("/v1/messages", json={**body, "model": "mini", "stream": True})
    delta = [e for e in _events(streamed) if e.get("type") == "message_delta"]
    assert delta[0]["usage"]["cost"] == MINI_COST


async def test_embeddings_priced_from_the_file(
    priced: httpx.AsyncClient, upstream: respx.Router
) -> None:
    answer = {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }
    upstream.post(f"{OPENAI_BASE}/embeddings").mock(return_value=httpx.Response(200, json=answer))
    response = await priced.post("/v1/embeddings", json={"model": "embed", "input": "hello"})
    assert response.json()["usage"]["cost"] == 1.6e-07  # 8 x 2e-8
    assert response.headers["x-toolrelay-cost"] == "0.00000016"


async def test_gemini_kind_thoughts_are_output(anyio_backend: str) -> None:
    # gemini/gemini-2.5-pro in LiteLLM's file: 1.25e-6 in, 1e-5 out, 1.25e-7 cache read.
    # 1000 prompt (400 cached), 100 candidates + 300 thoughts:
    # 600 x 1.25e-6 + 400 x 1.25e-7 + 400 x 1e-5 = 0.00075 + 0.00005 + 0.004
    answer = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Sunny."}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 400,
            "candidatesTokenCount": 100,
            "thoughtsTokenCount": 300,
            "totalTokenCount": 1400,
        },
    }
    with MockGemini(GEMINI_KEY) as gemini:
        raw = _raw()
        raw["providers"]["gm"] = {
            "kind": "gemini",
            "base_url": gemini.base_url,
            "api_key": GEMINI_KEY,
        }
        raw["models"].append({"name": "pro", "provider": "gm", "model": "gemini-2.5-pro"})
        gemini.answer(Reply(json=answer), model="gemini-2.5-pro")
        async with serve(make_config(raw)) as client:
            response = await client.post(
                "/v1/chat/completions", json={"model": "pro", "messages": USER}
            )
    assert gemini_path("gemini-2.5-pro") in gemini.gemini_requests()[0].path
    assert response.json()["usage"]["completion_tokens"] == 400
    assert response.json()["usage"]["cost"] == 0.0048


@pytest.mark.parametrize("stream", [False, True])
async def test_bedrock_kind_cache_reads_and_writes(anyio_backend: str, stream: bool) -> None:
    # anthropic.claude-sonnet-4-5-20250929-v1:0 in LiteLLM's file: 3 / 15 / 0.3 / 3.75 per
    # million, as CLAUDE_COST's working.
    model_id = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    usage = {
        "inputTokens": 100,
        "outputTokens": 50,
        "cacheReadInputTokens": 2000,
        "cacheWriteInputTokens": 400,
    }
    usage["totalTokens"] = 2550
    with MockBedrock() as bedrock:
        if stream:
            bedrock.add_stream(model_id, converse_stream("Sunny.", usage=usage))
        else:
            bedrock.add_converse(model_id, converse_answer("Sunny.", usage=usage))
        raw = _raw()
        raw["providers"]["aws"] = {
            "kind": "bedrock",
            "region": bedrock.region,
            "base_url": bedrock.base_url,
            "api_key": BEDROCK_KEY,
        }
        raw["models"].append({"name": "rock", "provider": "aws", "model": model_id})
        body: dict[str, Any] = {"model": "rock", "messages": USER}
        if stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        async with serve(make_config(raw)) as client:
            response = await client.post("/v1/chat/completions", json=body)
    answered = (
        parse_sse_body(response.content)[0][-1]["usage"] if stream else response.json()["usage"]
    )
    assert answered["prompt_tokens_details"] == {"cached_tokens": 2000, "cache_write_tokens": 400}
    assert answered["cost"] == CLAUDE_COST
