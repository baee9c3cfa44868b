"""`responses: native`: a provider that serves /v1/responses itself gets the request as the
client sent it, only `model` replaced, and its answer and every stream event come back
unchanged; the client's key never reaches it (CONTRACT.md, "OpenAI Responses API")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.mock_upstream import OPENAI_PATH, Frame, MockUpstream, Reply
from tests.integration.conftest import CLIENT_KEY, PROVIDER_KEY, assert_error, make_config, serve

pytestmark = pytest.mark.anyio

RESPONSES_PATH = "/v1/responses"
UPSTREAM_RESPONSE: dict[str, Any] = {
    "id": "resp_upstream_0123",
    "object": "response",
    "created_at": 1764000000,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "model": "gpt-5-2025-08-07",
    # What OpenAI's spec requires of every Response (the conformance hook checks relays too).
    "instructions": None,
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "metadata": {},
    "temperature": 1.0,
    "top_p": 1.0,
    "output": [
        {"id": "rs_up_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-opaque"},
        {
            "id": "msg_up_2",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hi!", "annotations": [], "logprobs": []}],
        },
        {
            "id": "ws_up_3",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "x"},
        },
    ],
    "usage": {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
        "unknown_extra": {"a": 1},
    },
    "some_future_field": [1, 2, 3],
}
# Everything a client may send, including what a translated upstream would refuse or drop.
REQUEST = {
    "model": "native",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "item_reference", "id": "msg_only_upstream_knows"},
    ],
    "instructions": "Be brief.",
    "tools": [
        {"type": "web_search"},
        {"type": "function", "name": "f", "parameters": {"type": "object"}},
    ],
    "tool_choice": {"type": "web_search"},
    "previous_response_id": "resp_only_upstream_knows",
    "conversation": None,
    "include": ["reasoning.encrypted_content"],
    "reasoning": {"effort": "high", "summary": "auto"},
    "store": True,
    "prompt_cache_key": "k-1",
    "max_tool_calls": 3,
    "future_field": {"deep": [1, {"x": None}]},
}


def native_config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"api_keys": [CLIENT_KEY]},
        "router": {"retries": 0},
        "providers": {
            "oai": {
                "kind": "openai",
                "base_url": f"{upstream.base_url}/v1",
                "api_key": PROVIDER_KEY,
                "responses": "native",
            },
        },
        "models": [{"name": "native", "provider": "oai", "model": "gpt-5"}],
    }


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


def check_relayed(upstream: MockUpstream, sent: dict[str, Any]) -> None:
    (exchange,) = upstream.requests(RESPONSES_PATH)
    assert exchange.body == {**sent, "model": "gpt-5"}
    assert exchange.headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert CLIENT_KEY not in json.dumps(exchange.headers) + json.dumps(exchange.body)
    assert upstream.requests(OPENAI_PATH) == []


async def test_the_request_goes_as_sent_and_the_answer_comes_back_unchanged(
    upstream: MockUpstream, anyio_backend: str
) -> None:
    upstream.add(Reply(json=UPSTREAM_RESPONSE), RESPONSES_PATH)
    async with serve(make_config(native_config(upstream))) as client:
        answer = await client.post("/v1/responses", json=REQUEST)
    assert answer.status_code == 200, answer.text
    assert answer.json() == UPSTREAM_RESPONSE
    check_relayed(upstream, REQUEST)


def stream_events() -> list[dict[str, Any]]:
    # No `usage` until the end (OpenAI's own server sends null there, which its spec forbids).
    shell = {**UPSTREAM_RESPONSE, "status": "in_progress", "output": []}
    del shell["usage"]
    message = UPSTREAM_RESPONSE["output"][1]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": shell},
        {"type": "response.in_progress", "response": shell},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "content": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_up_2",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hi",
            "logprobs": [],
            "obfuscation": "zz",
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_up_2",
            "output_index": 0,
            "content_index": 0,
            "delta": "!",
            "logprobs": [],
        },
        {"type": "response.some_future_event", "payload": {"n": [None, True]}},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed", "response": UPSTREAM_RESPONSE},
    ]
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


async def test_stream_events_come_back_unchanged(
    upstream: MockUpstream, anyio_backend: str
) -> None:
    events = stream_events()
    frames = [Frame(event, event=event["type"]) for event in events]
    upstream.add(Reply(frames=frames), RESPONSES_PATH)
    sent = {**REQUEST, "stream": True}
    async with (
        serve(make_config(native_config(upstream))) as client,
        client.stream("POST", "/v1/responses", json=sent) as answer,
    ):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in answer.aiter_lines()]
    named = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    data = [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]
    assert data == events
    assert named == [event["type"] for event in events]
    check_relayed(upstream, sent)


async def test_an_upstream_error_keeps_openais_shape(
    upstream: MockUpstream, anyio_backend: str
) -> None:
    error = {
        "error": {
            "message": "Previous response with id 'resp_gone' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }
    upstream.add(Reply(400, json=error), RESPONSES_PATH)
    async with serve(make_config(native_config(upstream))) as client:
        answer = await client.post(
            "/v1/responses",
            json={"model": "native", "input": "hi", "previous_response_id": "resp_gone"},
        )
    got = assert_error(answer, 400)
    assert got["code"] == "previous_response_not_found"
    assert got["param"] == "previous_response_id"
