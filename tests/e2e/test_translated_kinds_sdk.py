"""The real `openai` SDK against a real proxy process, for upstreams that are translated: an
Anthropic-format mock upstream (tool calls, stream and not, a full tool loop) and the built-in
demo model (a streamed tool call whose arguments fit the tool's schema)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from app.translators import TRANSLATORS
from tests.e2e.conftest import ANTHROPIC_KEY, RunningProxy, sdk_client
from tests.helpers.mock_upstream import ANTHROPIC_PATH, MockUpstream, Reply, anthropic_frames
from tests.helpers.upstream_answers import (
    ANTHROPIC_TEXT,
    CALLS,
    TOOLS,
    WEATHER_TOOL,
    anthropic_tool_events,
    anthropic_tool_message,
)

pytestmark = pytest.mark.e2e
needs_anthropic = pytest.mark.skipif(
    "anthropic" not in TRANSLATORS, reason="kind anthropic not registered yet"
)
needs_demo = pytest.mark.skipif("demo" not in TRANSLATORS, reason="kind demo not registered yet")

MESSAGES: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
EXPECTED_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


def _tool_only_message() -> dict[str, Any]:
    message = anthropic_tool_message()
    message["content"] = message["content"][1:]
    return message


def _calls(tool_calls: Any) -> list[tuple[str, str, Any]]:
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in tool_calls or []]


@needs_anthropic
def test_anthropic_non_stream_tool_calls(upstream: MockUpstream, client: openai.OpenAI) -> None:
    upstream.add(Reply(json=_tool_only_message()), ANTHROPIC_PATH)

    completion = client.chat.completions.create(model="claude", messages=MESSAGES, tools=TOOLS)

    (exchange,) = upstream.requests(ANTHROPIC_PATH)
    assert exchange.headers["x-api-key"] == ANTHROPIC_KEY
    assert exchange.body["max_tokens"] == 1024
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert _calls(choice.message.tool_calls) == EXPECTED_CALLS


@needs_anthropic
def test_anthropic_stream_of_parallel_tool_calls(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream.add(Reply(frames=anthropic_frames(anthropic_tool_events())), ANTHROPIC_PATH)

    text = ""
    calls: dict[int, list[str]] = {}
    finish_reasons = []
    stream = client.chat.completions.create(
        model="claude", messages=MESSAGES, tools=TOOLS, stream=True
    )
    for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for delta_call in delta.tool_calls or []:
            assert delta_call.function is not None
            if delta_call.id:
                calls[delta_call.index] = [delta_call.id, delta_call.function.name or "", ""]
            calls[delta_call.index][2] += delta_call.function.arguments or ""
        finish_reasons.append(chunk.choices[0].finish_reason)

    assert text == ANTHROPIC_TEXT
    assert [(i, n, json.loads(a)) for i, n, a in calls.values()] == EXPECTED_CALLS
    assert sorted(calls) == [0, 1]
    assert [reason for reason in finish_reasons if reason] == ["tool_calls"]


@needs_anthropic
def test_anthropic_stream_helper_final_completion_equals_non_stream(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream.add(Reply(frames=anthropic_frames(anthropic_tool_events())), ANTHROPIC_PATH)
    upstream.add(Reply(json=anthropic_tool_message()), ANTHROPIC_PATH)

    with client.chat.completions.stream(model="claude", messages=MESSAGES, tools=TOOLS) as stream:
        streamed = stream.get_final_completion()
    whole = client.chat.completions.create(model="claude", messages=MESSAGES, tools=TOOLS)

    assert streamed.choices[0].finish_reason == whole.choices[0].finish_reason == "tool_calls"
    assert streamed.choices[0].message.content == whole.choices[0].message.content
    streamed_calls = _calls(streamed.choices[0].message.tool_calls)
    assert streamed_calls == _calls(whole.choices[0].message.tool_calls) == EXPECTED_CALLS


@needs_anthropic
def test_anthropic_tool_loop_sends_results_back_first_in_one_user_message(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    final_answer = anthropic_tool_message() | {
        "content": [{"type": "text", "text": "18C in Paris; 21:04 in Tokyo."}],
        "stop_reason": "end_turn",
    }
    upstream.add(Reply(json=_tool_only_message()), ANTHROPIC_PATH)
    upstream.add(Reply(json=final_answer), ANTHROPIC_PATH)

    first = client.chat.completions.create(model="claude", messages=MESSAGES, tools=TOOLS)
    assistant = first.choices[0].message
    results = {"get_weather": "18C, sunny", "get_time": "21:04"}
    history: Any = [
        *MESSAGES,
        assistant.model_dump(exclude_none=True),
        *[
            {"role": "tool", "tool_call_id": call.id, "content": results[call.function.name]}
            for call in assistant.tool_calls or []
        ],
    ]
    second = client.chat.completions.create(model="claude", messages=history, tools=TOOLS)

    assert second.choices[0].message.content == "18C in Paris; 21:04 in Tokyo."
    assert second.choices[0].finish_reason == "stop"
    sent = upstream.requests(ANTHROPIC_PATH)[1].body["messages"]
    assert [message["role"] for message in sent] == ["user", "assistant", "user"]
    blocks = sent[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in blocks] == [call_id for call_id, _, _ in CALLS]


@needs_demo
def test_demo_streams_a_tool_call_with_schema_valid_arguments(client: openai.OpenAI) -> None:
    name, arguments, finish_reasons = "", "", []
    stream = client.chat.completions.create(
        model="demo", messages=MESSAGES, tools=[WEATHER_TOOL], stream=True
    )
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or []:
            assert delta_call.index == 0
            assert delta_call.function is not None
            name += delta_call.function.name or ""
            arguments += delta_call.function.arguments or ""
        finish_reasons.append(chunk.choices[0].finish_reason)

    assert name == "get_weather"
    jsonschema.validate(json.loads(arguments), WEATHER_TOOL["function"]["parameters"])
    assert [reason for reason in finish_reasons if reason] == ["tool_calls"]


@needs_demo
def test_demo_non_stream_tool_call(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="demo", messages=MESSAGES, tools=TOOLS)

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER_TOOL["function"]["parameters"])
