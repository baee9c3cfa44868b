"""Anthropic threads on /v1/messages: kept by the proxy for translated kinds (the conversation
rebuilt before the new messages, streamed or not), relayed as sent to anthropic upstreams, and
an unknown id refused with the code the anthropic SDK recovers from."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import respx

from tests.helpers.mock_upstream import openai_frames
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import ANTHROPIC_URL, OPENAI_URL, sent_json, sse_response

pytestmark = pytest.mark.anyio

TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]
CALL = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}
TEXT = {
    **CALL,
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "sunny"}, "finish_reason": "stop"}
    ],
}
RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}],
}


def messages(**fields: Any) -> dict[str, Any]:
    return {"model": "mini", "max_tokens": 64, **fields}


async def test_a_thread_continues_with_only_the_new_messages(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(OPENAI_URL).mock(
        side_effect=[httpx.Response(200, json=CALL), httpx.Response(200, json=TEXT)]
    )
    first = await proxy.post(
        "/v1/messages",
        json=messages(
            system="be brief",
            tools=TOOLS,
            messages=[{"role": "user", "content": "Weather?"}],
            thread={"type": "create"},
        ),
    )
    assert first.status_code == 200, first.text
    thread = {"type": "continue", "previous_message_id": first.json()["id"]}
    second = await proxy.post("/v1/messages", json=messages(messages=[RESULT], thread=thread))
    assert second.status_code == 200, second.text
    assert second.json()["content"] == [{"type": "text", "text": "sunny"}]
    sent = sent_json(route)
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert sent["messages"][0]["content"] == "be brief"
    assert sent["messages"][2]["tool_calls"][0]["id"] == "call_1"
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["get_weather"]


async def test_a_streamed_answer_is_kept_too(proxy: httpx.AsyncClient) -> None:
    body = messages(
        model="demo",
        tools=TOOLS,
        stream=True,
        messages=[{"role": "user", "content": "Weather?"}],
        thread={"type": "create"},
    )
    first = await proxy.post("/v1/messages", json=body)
    events = [
        orjson.loads(line[6:]) for line in first.text.splitlines() if line.startswith("data: ")
    ]
    message_id = events[0]["message"]["id"]
    call_id = next(e["content_block"]["id"] for e in events if e["type"] == "content_block_start")
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "sunny"}],
    }
    thread = {"type": "continue", "previous_message_id": message_id}
    second = await proxy.post(
        "/v1/messages", json=messages(model="demo", messages=[result], thread=thread)
    )
    assert second.status_code == 200, second.text
    assert "sunny" in second.json()["content"][0]["text"]


async def test_an_unknown_thread_is_refused_with_its_code(proxy: httpx.AsyncClient) -> None:
    thread = {"type": "continue", "previous_message_id": "msg_nope"}
    refused = await proxy.post("/v1/messages", json=messages(messages=[RESULT], thread=thread))
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["details"] == {"error_code": "thread_not_found"}
    assert "thread.previous_message_id" in error["message"]


async def test_an_anthropic_upstream_gets_the_thread_as_sent(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    answer = {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    route = upstream.post(ANTHROPIC_URL).mock(return_value=httpx.Response(200, json=answer))
    thread = {"type": "continue", "previous_message_id": "msg_upstream_knows"}
    relayed = await proxy.post(
        "/v1/messages", json=messages(model="claude", messages=[RESULT], thread=thread)
    )
    assert relayed.status_code == 200, relayed.text
    assert sent_json(route)["thread"] == thread


async def test_a_streamed_call_whose_arguments_are_not_json_is_kept_as_it_came(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    """`on_invalid: pass` (the default) relays the bad `partial_json`; the thread keeps the
    arguments as they came, and the next turn sends them up so."""
    bad = '{"city": "Par'
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": bad}
    chunks = openai_text_chunks()
    delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
    chunks.insert(1, chunks[1] | {"choices": [delta]})
    chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
    route = upstream.post(OPENAI_URL).mock(
        side_effect=[sse_response(openai_frames(chunks)), httpx.Response(200, json=TEXT)]
    )
    body = messages(
        tools=TOOLS,
        stream=True,
        messages=[{"role": "user", "content": "Weather?"}],
        thread={"type": "create"},
    )
    first = await proxy.post("/v1/messages", json=body)
    events = [
        orjson.loads(line[6:]) for line in first.text.splitlines() if line.startswith("data: ")
    ]
    assert [e["type"] for e in events if e["type"] == "error"] == [], first.text
    relayed = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(relayed) == bad
    assert events[-1]["type"] == "message_stop"
    thread = {"type": "continue", "previous_message_id": events[0]["message"]["id"]}
    second = await proxy.post("/v1/messages", json=messages(messages=[RESULT], thread=thread))
    assert second.status_code == 200, second.text
    assert sent_json(route)["messages"][1]["tool_calls"][0]["function"]["arguments"] == bad
