"""The official `anthropic` SDK against a real proxy process on /v1/messages, in front of an
OpenAI-compatible mock, a validating Gemini mock and a validating Anthropic mock: text, one and
parallel tool_use, a multi-turn tool loop with `is_error` results, tool_choice, every stream
rebuilt by the SDK's own accumulator, passthrough to Anthropic as sent, error shapes, a
recorded Claude Code session, and a disconnect closing the upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    KindMocks,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers.anthropic_stream import assert_anthropic_stream, parse_anthropic_sse
from tests.helpers.mock_anthropic import MockAnthropic
from tests.helpers.mock_gemini import (
    MockGemini,
    gemini_answer,
    gemini_tool_answer,
    gemini_tool_frames,
)
from tests.helpers.mock_upstream import (
    OPENAI_PATH,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import (
    CALLS,
    anthropic_tool_events,
    anthropic_tool_message,
    openai_text_chunks,
    openai_tool_chunks,
    openai_tool_completion,
)

pytestmark = pytest.mark.e2e

RECORDINGS = Path(__file__).parents[1] / "recordings" / "claude_code"
WEATHER: Any = {
    "name": "get_weather",
    "description": "Current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TIME: Any = {
    "name": "get_time",
    "description": "Local time in a timezone.",
    "input_schema": {
        "type": "object",
        "properties": {"timezone": {"type": "string"}, "hours24": {"type": "boolean"}},
        "required": ["timezone", "hours24"],
    },
}
TOOLS = [WEATHER, TIME]
QUESTION: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
RAW_EVENTS = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}
EXPECTED_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]


@pytest.fixture(scope="module")
def proxy(
    kind_mocks: KindMocks,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningProxy]:
    oa, gemini, an = kind_mocks
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini.base_url}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{an.base_url}", api_key: {ANTHROPIC_KEY}}}""",
        """  - {name: gpt, provider: oa, model: gpt-4o-mini, max_output_tokens: 16384}
  - {name: gemini, provider: gm, model: gemini-2.5-flash}
  - {name: claude, provider: an, model: claude-sonnet-4-5}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("anthropic-face")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[anthropic.Anthropic]:
    base_url = f"http://127.0.0.1:{proxy.port}"
    with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        yield sdk


def ask(client: anthropic.Anthropic, *, stream: bool, **fields: Any) -> dict[str, Any]:
    """One answer as a dict: streamed, the SDK's accumulator's message, after the stream
    itself was checked event by event."""
    fields = {"max_tokens": 1024, **fields}
    if not stream:
        return client.messages.create(**fields).to_dict(exclude_none=True)
    with client.messages.stream(**fields) as events:
        raw = [event.to_dict() for event in events if event.type in RAW_EVENTS]
        final = events.get_final_message().to_dict(exclude_none=True)
    assert assert_anthropic_stream(raw) == final
    return final


def tool_uses(message: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(b["id"], b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"]


# --- an OpenAI-compatible upstream -------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_text_from_an_openai_upstream(
    oa: MockUpstream, client: anthropic.Anthropic, stream: bool
) -> None:
    reply = (
        Reply(frames=openai_frames(openai_text_chunks("Sunny ", "in Paris.")))
        if stream
        else Reply(json=text_completion("Sunny in Paris."))
    )
    oa.add(reply)
    message = ask(client, stream=stream, model="gpt", messages=QUESTION, system="Be brief.")
    assert message["content"] == [{"type": "text", "text": "Sunny in Paris."}]
    assert message["stop_reason"] == "end_turn"
    sent = oa.requests(OPENAI_PATH)[-1].body
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["model"] == "gpt-4o-mini"


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_parallel_tool_use_from_an_openai_upstream(
    oa: MockUpstream, client: anthropic.Anthropic, stream: bool
) -> None:
    reply = (
        Reply(frames=openai_frames(openai_tool_chunks(include_usage=True)))
        if stream
        else Reply(json=openai_tool_completion())
    )
    oa.add(reply)
    message = ask(client, stream=stream, model="gpt", messages=QUESTION, tools=TOOLS)
    assert tool_uses(message) == EXPECTED_CALLS
    assert message["stop_reason"] == "tool_use"
    assert message["usage"]["input_tokens"] == 82
    sent = oa.requests(OPENAI_PATH)[-1].body
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["get_weather", "get_time"]
    assert sent["tools"][0]["function"]["parameters"] == WEATHER["input_schema"]
    if stream:
        assert sent["stream_options"] == {"include_usage": True}


def test_stream_and_non_stream_give_the_same_message(
    oa: MockUpstream, client: anthropic.Anthropic
) -> None:
    oa.add(Reply(json=openai_tool_completion()))
    oa.add(Reply(frames=openai_frames(openai_tool_chunks(include_usage=True))))
    whole = ask(client, stream=False, model="gpt", messages=QUESTION, tools=TOOLS)
    streamed = ask(client, stream=True, model="gpt", messages=QUESTION, tools=TOOLS)
    for field in ("content", "stop_reason", "role", "type", "model"):
        assert streamed[field] == whole[field]


def test_a_tool_loop_with_an_error_result(oa: MockUpstream, client: anthropic.Anthropic) -> None:
    oa.add(Reply(frames=openai_frames(openai_tool_chunks(include_usage=True))))
    oa.add(Reply(frames=openai_frames(openai_text_chunks("18 C in Paris; Tokyo failed."))))
    messages: list[Any] = list(QUESTION)
    first = ask(client, stream=True, model="gpt", messages=messages, tools=TOOLS)
    messages.append({"role": "assistant", "content": first["content"]})
    (weather_id, _, _), (time_id, _, _) = tool_uses(first)
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": weather_id, "content": "18 C"},
                {
                    "type": "tool_result",
                    "tool_use_id": time_id,
                    "content": [{"type": "text", "text": "timezone service down"}],
                    "is_error": True,
                },
            ],
        }
    )
    second = ask(client, stream=True, model="gpt", messages=messages, tools=TOOLS)
    assert second["content"] == [{"type": "text", "text": "18 C in Paris; Tokyo failed."}]
    sent = oa.requests(OPENAI_PATH)[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [call["id"] for call in sent[1]["tool_calls"]] == [weather_id, time_id]
    assert sent[2:] == [
        {"role": "tool", "tool_call_id": weather_id, "content": "18 C"},
        {"role": "tool", "tool_call_id": time_id, "content": "Error: timezone service down"},
    ]


@pytest.mark.parametrize(
    ("tool_choice", "sent_choice", "parallel"),
    [
        ({"type": "auto"}, "auto", None),
        ({"type": "any"}, "required", None),
        ({"type": "none"}, "none", None),
        (
            {"type": "tool", "name": "get_time"},
            {"type": "function", "function": {"name": "get_time"}},
            None,
        ),
        ({"type": "auto", "disable_parallel_tool_use": True}, "auto", False),
    ],
    ids=["auto", "any", "none", "tool", "no-parallel"],
)
def test_tool_choice(
    oa: MockUpstream,
    client: anthropic.Anthropic,
    tool_choice: Any,
    sent_choice: Any,
    parallel: bool | None,
) -> None:
    oa.add(Reply(json=text_completion("ok")))
    ask(client, stream=False, model="gpt", messages=QUESTION, tools=TOOLS, tool_choice=tool_choice)
    sent = oa.requests(OPENAI_PATH)[-1].body
    assert sent["tool_choice"] == sent_choice
    assert sent.get("parallel_tool_calls") == parallel


def test_max_tokens_above_the_models_limit_is_lowered(
    oa: MockUpstream, client: anthropic.Anthropic
) -> None:
    oa.add(Reply(frames=openai_frames(openai_text_chunks("ok"))))
    ask(client, stream=True, model="gpt", messages=QUESTION, max_tokens=32000)
    assert oa.requests(OPENAI_PATH)[-1].body["max_completion_tokens"] == 16384


# --- a Gemini upstream (the mock refuses what Gemini would) -------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_a_tool_loop_on_a_gemini_upstream(
    gemini: MockGemini, client: anthropic.Anthropic, stream: bool
) -> None:
    first_reply = Reply(frames=gemini_tool_frames()) if stream else Reply(json=gemini_tool_answer())
    gemini.answer(first_reply, stream=stream)
    final = gemini_text("Done.")
    gemini.answer(Reply(frames=[Frame(final)]) if stream else Reply(json=final), stream=stream)

    messages: list[Any] = list(QUESTION)
    first = ask(client, stream=stream, model="gemini", messages=messages, tools=TOOLS)
    assert [(name, args) for _, name, args in tool_uses(first)] == [
        (name, args) for _, name, args in EXPECTED_CALLS
    ]
    assert first["stop_reason"] == "tool_use"
    messages.append({"role": "assistant", "content": first["content"]})
    results = [
        {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}
        for call_id, _, _ in tool_uses(first)
    ]
    messages.append({"role": "user", "content": results})
    second = ask(client, stream=stream, model="gemini", messages=messages, tools=TOOLS)
    assert second["content"] == [{"type": "text", "text": "Done."}]
    assert len(gemini.gemini_requests()) == 2  # the mock refused nothing


# --- an Anthropic upstream: passthrough -------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_an_anthropic_upstream_sees_the_request_as_sent(
    an: MockAnthropic, proxy: RunningProxy, stream: bool
) -> None:
    upstream_message = anthropic_tool_message()
    reply = (
        Reply(frames=anthropic_frames(anthropic_tool_events()))
        if stream
        else Reply(json=upstream_message)
    )
    an.answer(reply, "/v1/messages?beta=true")
    body: dict[str, Any] = {
        "model": "claude",
        "max_tokens": 2048,
        "messages": QUESTION,
        "tools": [{**WEATHER, "cache_control": {"type": "ephemeral"}}, TIME],
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "metadata": {"user_id": "u-1"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "stream": stream,
    }
    beta = "claude-code-20250219,context-management-2025-06-27"
    response = httpx.post(
        f"http://127.0.0.1:{proxy.port}/v1/messages?beta=true",
        json=body,
        headers={
            "x-api-key": CLIENT_KEY,
            "anthropic-version": "2023-06-01",
            "anthropic-beta": beta,
        },
        timeout=10,
    )
    assert response.status_code == 200
    (exchange,) = an.exchanges
    assert exchange.path == "/v1/messages?beta=true"
    assert exchange.body == {**body, "model": "claude-sonnet-4-5"}
    assert exchange.headers["anthropic-beta"] == beta
    assert exchange.headers["x-api-key"] == ANTHROPIC_KEY
    if stream:
        assert parse_anthropic_sse(response.content) == anthropic_tool_events()
    else:
        assert response.json() == upstream_message


# --- errors -------------------------------------------------------------------------------------


def test_a_wrong_key_is_an_anthropic_authentication_error(proxy: RunningProxy) -> None:
    base_url = f"http://127.0.0.1:{proxy.port}"
    with (
        anthropic.Anthropic(base_url=base_url, api_key="wrong", max_retries=0) as sdk,
        pytest.raises(anthropic.AuthenticationError) as caught,
    ):
        sdk.messages.create(model="gpt", max_tokens=10, messages=QUESTION)
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_an_unknown_model_is_not_found(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(model="nope", max_tokens=10, messages=QUESTION)
    assert caught.value.body["type"] == "error"  # type: ignore[index]


def test_a_bad_request_is_an_anthropic_invalid_request(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="gpt", max_tokens=10, messages=[])
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("upstream_status", "status", "error_type", "sdk_error"),
    [
        (429, 429, "rate_limit_error", anthropic.RateLimitError),
        (500, 502, "api_error", anthropic.InternalServerError),
        (503, 529, "overloaded_error", anthropic.InternalServerError),
    ],
)
def test_upstream_failures_in_anthropics_shape(
    oa: MockUpstream,
    client: anthropic.Anthropic,
    upstream_status: int,
    status: int,
    error_type: str,
    sdk_error: type[anthropic.APIStatusError],
) -> None:
    error = {"error": {"message": "busy", "type": "server_error"}}
    oa.add(Reply(upstream_status, json=error, headers={"retry-after": "7"}))
    with pytest.raises(sdk_error) as caught:
        client.messages.create(model="gpt", max_tokens=10, messages=QUESTION)
    assert caught.value.status_code == status
    assert caught.value.body["error"]["type"] == error_type  # type: ignore[index]
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "7"


def test_a_failure_mid_stream_is_an_error_event_without_message_stop(
    oa: MockUpstream, proxy: RunningProxy
) -> None:
    oa.add(Reply(frames=openai_frames(openai_text_chunks("partial"), done=False), drop_after=2))
    response = httpx.post(
        f"http://127.0.0.1:{proxy.port}/v1/messages",
        json={"model": "gpt", "max_tokens": 10, "messages": QUESTION, "stream": True},
        headers={"x-api-key": CLIENT_KEY},
        timeout=10,
    )
    events = parse_anthropic_sse(response.content)
    assert events[0]["type"] == "message_start"
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["type"] == "api_error"
    assert "message_stop" not in [event["type"] for event in events]


def test_client_disconnect_closes_the_upstream_request(
    oa: MockUpstream, client: anthropic.Anthropic
) -> None:
    frames = openai_frames(openai_text_chunks("one", "two"))
    oa.add(Reply(frames=frames, hang_after=2))
    with client.messages.stream(model="gpt", max_tokens=10, messages=QUESTION) as events:
        next(iter(events))
    (exchange,) = oa.requests(OPENAI_PATH)
    assert exchange.closed.wait(timeout=5), "the proxy kept the upstream request open"


# --- count_tokens -------------------------------------------------------------------------------


def test_count_tokens_estimates_for_openai_and_asks_anthropic(
    an: MockAnthropic, client: anthropic.Anthropic
) -> None:
    estimated = client.messages.count_tokens(model="gpt", messages=QUESTION, tools=TOOLS)
    assert 20 < estimated.input_tokens < 200
    an.add(Reply(json={"input_tokens": 77}), "/v1/messages/count_tokens")
    counted = client.messages.count_tokens(model="claude", messages=QUESTION)
    assert counted.input_tokens == 77


# --- a recorded Claude Code session -------------------------------------------------------------


def recorded(name: str) -> dict[str, Any]:
    recording: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text())
    return recording


@pytest.mark.parametrize("model", ["gpt", "gemini"])
@pytest.mark.parametrize("turn", ["title", "first_turn", "tool_result_turn"])
def test_a_recorded_claude_code_session_replays(
    oa: MockUpstream, gemini: MockGemini, proxy: RunningProxy, model: str, turn: str
) -> None:
    recording = recorded(turn)
    body = {**recording["body"], "model": model}
    if model == "gpt":
        oa.add(Reply(frames=openai_frames(openai_text_chunks('{"title": "Read a file"}'))))
    else:
        gemini.answer(Reply(frames=[Frame(gemini_text('{"title": "Read a file"}'))]), stream=True)
    response = httpx.post(
        f"http://127.0.0.1:{proxy.port}{recording['path']}",
        json=body,
        headers={**recording["headers"], "x-api-key": CLIENT_KEY},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    message = assert_anthropic_stream(parse_anthropic_sse(response.content))
    assert message["content"] == [{"type": "text", "text": '{"title": "Read a file"}'}]
    if model == "gpt":
        sent = oa.requests(OPENAI_PATH)[-1].body
        assert sent["max_completion_tokens"] == 16384  # 32000 lowered to the model's limit
        assert "metadata" not in sent
        assert "reasoning_effort" not in sent  # adaptive thinking: left to the upstream
    else:
        assert len(gemini.gemini_requests()) == 1  # the mock refused nothing


def text_completion(text: str) -> dict[str, Any]:
    completion = openai_tool_completion()
    completion["choices"][0]["message"] = {"role": "assistant", "content": text}
    completion["choices"][0]["finish_reason"] = "stop"
    return completion


def gemini_text(text: str) -> dict[str, Any]:
    return gemini_answer([{"text": text}])
