"""kind: anthropic through the whole app: the Messages request it sends (path, headers,
max_tokens, tool results), and the OpenAI shapes the client gets back, stream and not."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from app.translators import TRANSLATORS
from tests.helpers.mock_upstream import Frame, anthropic_frames
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body
from tests.helpers.upstream_answers import (
    ANTHROPIC_TEXT,
    CALLS,
    TOOLS,
    anthropic_tool_events,
    anthropic_tool_message,
)
from tests.integration.conftest import (
    ANTHROPIC_KEY,
    ANTHROPIC_URL,
    USER,
    assert_error,
    chat,
    sent_json,
    sse_response,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif("anthropic" not in TRANSLATORS, reason="kind anthropic not registered yet"),
]

TOOL_LOOP: list[dict[str, Any]] = [
    {"role": "system", "content": "Use the tools."},
    *USER,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in CALLS
        ],
    },
    {"role": "tool", "tool_call_id": CALLS[0][0], "content": "18C and sunny"},
    {"role": "tool", "tool_call_id": CALLS[1][0], "content": "21:04"},
    {"role": "user", "content": "Thanks. Anything else?"},
]


def _message_response(message: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.Response(200, json=message or anthropic_tool_message())


async def test_request_goes_to_messages_with_anthropic_auth(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(ANTHROPIC_URL).mock(return_value=_message_response())

    response = await proxy.post("/v1/chat/completions", json=chat("claude"))

    assert response.status_code == 200
    headers = route.calls.last.request.headers
    assert headers["x-api-key"] == ANTHROPIC_KEY
    assert headers["anthropic-version"] == "2023-06-01"


@pytest.mark.parametrize(
    ("client_fields", "max_tokens"),
    [({}, 4096), ({"max_tokens": 300}, 300), ({"max_completion_tokens": 200}, 200)],
)
async def test_max_tokens_defaults_to_the_models_setting(
    proxy: httpx.AsyncClient,
    upstream: respx.Router,
    client_fields: dict[str, int],
    max_tokens: int,
) -> None:
    route = upstream.post(ANTHROPIC_URL).mock(return_value=_message_response())

    await proxy.post("/v1/chat/completions", json=chat("claude", **client_fields))

    upstream_body = sent_json(route)
    assert upstream_body["model"] == "claude-sonnet-4-5"
    assert upstream_body["max_tokens"] == max_tokens


async def test_tool_results_go_back_in_one_user_message_results_first(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(ANTHROPIC_URL).mock(return_value=_message_response())

    await proxy.post("/v1/chat/completions", json=chat("claude", messages=TOOL_LOOP, tools=TOOLS))

    messages = sent_json(route)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    tool_uses = [b for b in messages[1]["content"] if b["type"] == "tool_use"]
    assert [(b["id"], b["name"], b["input"]) for b in tool_uses] == [
        (call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS
    ]
    results = messages[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert [b["tool_use_id"] for b in results[:2]] == [call_id for call_id, _, _ in CALLS]
    assert results[2]["text"] == "Thanks. Anything else?"


async def test_tools_are_sent_with_their_schemas(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(ANTHROPIC_URL).mock(return_value=_message_response())

    await proxy.post("/v1/chat/completions", json=chat("claude", tools=TOOLS))

    sent_tools = sent_json(route)["tools"]
    assert [(t["name"], t["input_schema"]) for t in sent_tools] == [
        (t["function"]["name"], t["function"]["parameters"]) for t in TOOLS
    ]


async def test_non_stream_tool_calls_come_back_in_openai_shape(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(ANTHROPIC_URL).mock(return_value=_message_response())

    response = await proxy.post("/v1/chat/completions", json=chat("claude", tools=TOOLS))

    completion = response.json()
    assert completion["object"] == "chat.completion"
    assert completion["model"] == "claude"
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == ANTHROPIC_TEXT
    calls = choice["message"]["tool_calls"]
    assert [(c["id"], c["type"], c["function"]["name"]) for c in calls] == [
        (call_id, "function", name) for call_id, name, _ in CALLS
    ]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        json.loads(arguments) for _, _, arguments in CALLS
    ]
    usage = completion["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (
        82,
        41,
        123,
    )


async def test_tool_only_answer_has_null_content(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    message = anthropic_tool_message()
    message["content"] = message["content"][1:]
    upstream.post(ANTHROPIC_URL).mock(return_value=_message_response(message))

    response = await proxy.post("/v1/chat/completions", json=chat("claude", tools=TOOLS))

    assert response.json()["choices"][0]["message"]["content"] is None


@pytest.mark.parametrize("include_usage", [True, False])
async def test_stream_meets_the_contract(
    proxy: httpx.AsyncClient, upstream: respx.Router, include_usage: bool
) -> None:
    frames = anthropic_frames(anthropic_tool_events())
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(frames))
    body = chat("claude", tools=TOOLS, stream=True)
    body["stream_options"] = {"include_usage": include_usage}

    response = await proxy.post("/v1/chat/completions", json=body)

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert_openai_stream(chunks, include_usage=include_usage, done=done)
    assert chunks[0]["model"] == "claude"


async def test_folded_stream_equals_the_non_stream_answer(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = anthropic_frames(anthropic_tool_events())
    upstream.post(ANTHROPIC_URL).mock(side_effect=[sse_response(frames), _message_response()])
    stream_body = chat("claude", tools=TOOLS, stream=True, stream_options={"include_usage": True})

    streamed = await proxy.post("/v1/chat/completions", json=stream_body)
    whole = await proxy.post("/v1/chat/completions", json=chat("claude", tools=TOOLS))

    folded = fold_stream(parse_sse_body(streamed.content)[0])
    expected = whole.json()
    for answer in (folded, expected):
        del answer["id"], answer["created"]
        # Streamed arguments are Anthropic's raw partial_json; the non-stream ones are its
        # `input` object serialised: the same JSON, not necessarily the same whitespace.
        for call in answer["choices"][0]["message"]["tool_calls"]:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    assert folded == expected


async def test_upstream_429_keeps_status_message_and_retry_after(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many tokens."}}
    upstream.post(ANTHROPIC_URL).respond(429, json=body, headers={"retry-after": "9"})

    response = await proxy.post("/v1/chat/completions", json=chat("claude"))

    error = assert_error(response, 429)
    assert error["message"] == "Too many tokens."
    assert response.headers["retry-after"] == "9"


@pytest.mark.parametrize(("status", "expected"), [(400, 400), (404, 404), (500, 502), (529, 502)])
async def test_upstream_http_errors_map_like_any_upstream(
    proxy: httpx.AsyncClient, upstream: respx.Router, status: int, expected: int
) -> None:
    body = {"type": "error", "error": {"type": "some_error", "message": "Nope from Claude."}}
    upstream.post(ANTHROPIC_URL).respond(status, json=body)

    response = await proxy.post("/v1/chat/completions", json=chat("claude"))

    error = assert_error(response, expected)
    if expected < 500:
        assert error["message"] == "Nope from Claude."


async def test_error_event_mid_stream_is_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    frames = [*anthropic_frames(anthropic_tool_events()[:5]), Frame(overloaded, event="error")]
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat("claude", stream=True))

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done
    assert [set(chunk) for chunk in chunks if "error" in chunk] == [{"error"}]
    assert chunks[-1]["error"]["message"] == "Overloaded"


async def test_stream_cut_before_message_stop_ends_with_an_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = anthropic_frames(anthropic_tool_events()[:9])
    upstream.post(ANTHROPIC_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat("claude", stream=True))

    chunks, done = parse_sse_body(response.content)
    assert not done
    assert set(chunks[-1]) == {"error"}
