"""The real `openai` SDK against a real proxy process (`python -m app`) whose gemini provider is
the local mock Gemini, which refuses what the Gemini API refuses (tests/helpers/gemini_rules.py):
tool calls stream and not, parallel ones, and a three-turn tool loop whose thought signatures
must come back on the right calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.e2e.conftest import (
    GEMINI_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_gemini import (
    GEMINI_TEXT,
    MODEL,
    SIGNATURE,
    USAGE_METADATA,
    MockGemini,
    gemini_answer,
    gemini_error,
    gemini_path,
    gemini_tool_answer,
    gemini_tool_frames,
)
from tests.helpers.mock_upstream import Frame, Reply
from tests.helpers.upstream_answers import CALLS, TOOLS
from tests.unit.translators.gemini.test_schema import TOOL_SCHEMA

pytestmark = pytest.mark.e2e

MESSAGES: Any = [
    {"role": "system", "content": "Use the tools."},
    {"role": "user", "content": "Weather in Paris and time in Tokyo?"},
]
EXPECTED_CALLS = [(name, json.loads(arguments)) for _, name, arguments in CALLS]
SECOND_SIGNATURE = "EtoCCtcCAdHtim9/c2Vjb25kIHR1cm4gc2lnbmF0dXJl+Kw=="
USAGE_THOUGHTS = USAGE_METADATA["thoughtsTokenCount"]


@pytest.fixture(scope="module")
def gemini() -> Iterator[MockGemini]:
    with MockGemini(GEMINI_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(gemini: MockGemini, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    config = keyed_config(
        f"""  gm:
    kind: gemini
    base_url: {gemini.base_url}
    api_key: {GEMINI_KEY}""",
        f"""  - {{name: gemini, provider: gm, model: {MODEL}}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("gemini-proxy")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


@pytest.fixture(autouse=True)
def _fresh_gemini(gemini: MockGemini) -> None:
    gemini.reset()


def _calls(tool_calls: Any) -> list[tuple[str, Any]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in tool_calls or []]


def test_non_stream_parallel_tool_calls(gemini: MockGemini, client: openai.OpenAI) -> None:
    gemini.answer(Reply(json=gemini_tool_answer(text=False)))

    completion = client.chat.completions.create(model="gemini", messages=MESSAGES, tools=TOOLS)

    (exchange,) = gemini.gemini_requests()
    assert exchange.path == gemini_path()
    assert exchange.headers["x-goog-api-key"] == GEMINI_KEY
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert _calls(choice.message.tool_calls) == EXPECTED_CALLS
    assert len({call.id for call in choice.message.tool_calls or []}) == 2


def test_stream_of_parallel_tool_calls(gemini: MockGemini, client: openai.OpenAI) -> None:
    gemini.answer(Reply(frames=gemini_tool_frames()), stream=True)

    text, calls, finish_reasons = "", {}, []
    stream = client.chat.completions.create(
        model="gemini", messages=MESSAGES, tools=TOOLS, stream=True
    )
    for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for delta_call in delta.tool_calls or []:
            assert delta_call.function is not None
            if delta_call.id:
                assert delta_call.index not in calls
                calls[delta_call.index] = [delta_call.function.name or "", ""]
            else:
                assert delta_call.function.name is None
            calls[delta_call.index][1] += delta_call.function.arguments or ""
        finish_reasons.append(chunk.choices[0].finish_reason)

    assert gemini.gemini_requests()[0].path == gemini_path(stream=True)
    assert text == GEMINI_TEXT
    assert sorted(calls) == [0, 1]
    assert [(name, json.loads(arguments)) for name, arguments in calls.values()] == EXPECTED_CALLS
    assert [reason for reason in finish_reasons if reason] == ["tool_calls"]


def test_stream_helper_final_completion_equals_non_stream(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    gemini.answer(Reply(frames=gemini_tool_frames()), stream=True)
    gemini.answer(Reply(json=gemini_tool_answer()))

    with client.chat.completions.stream(model="gemini", messages=MESSAGES, tools=TOOLS) as stream:
        streamed = stream.get_final_completion()
    whole = client.chat.completions.create(model="gemini", messages=MESSAGES, tools=TOOLS)

    assert streamed.choices[0].finish_reason == whole.choices[0].finish_reason == "tool_calls"
    assert streamed.choices[0].message.content == whole.choices[0].message.content == GEMINI_TEXT
    assert _calls(streamed.choices[0].message.tool_calls) == _calls(
        whole.choices[0].message.tool_calls
    )


def test_three_turn_tool_loop_round_trips_thought_signatures(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    """call -> result -> call -> result -> answer, the second call streamed. The mock refuses
    any request whose replayed calls lack the signature it issued with them."""
    weather_call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    time_call = {
        "functionCall": {"name": "get_time", "args": {"timezone": "Asia/Tokyo", "hours24": True}}
    }
    gemini.answer(Reply(json=gemini_answer([{**weather_call, "thoughtSignature": SIGNATURE}])))
    gemini.answer(
        Reply(
            frames=[
                Frame(gemini_answer([{"text": "Now the time."}], finish=None)),
                Frame(gemini_answer([time_call], finish=None)),
                Frame(gemini_answer([{"text": "", "thoughtSignature": SECOND_SIGNATURE}])),
            ]
        ),
        stream=True,
    )
    gemini.answer(Reply(json=gemini_answer([{"text": "18C in Paris; 21:04 in Tokyo."}])))

    history: Any = list(MESSAGES)
    first = client.chat.completions.create(model="gemini", messages=history, tools=TOOLS)
    history += _tool_turn(first.choices[0].message, "18C, sunny")
    with client.chat.completions.stream(model="gemini", messages=history, tools=TOOLS) as stream:
        second = stream.get_final_completion()
    history += _tool_turn(second.choices[0].message, "21:04")
    third = client.chat.completions.create(model="gemini", messages=history, tools=TOOLS)

    assert third.choices[0].message.content == "18C in Paris; 21:04 in Tokyo."
    assert third.choices[0].finish_reason == "stop"
    requests = gemini.gemini_requests()
    assert [exchange.path for exchange in requests] == [
        gemini_path(),
        gemini_path(stream=True),
        gemini_path(),
    ]
    second_body = requests[1].body
    assert second_body["systemInstruction"] == {"parts": [{"text": "Use the tools."}]}
    assert second_body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and time in Tokyo?"}]},
        {"role": "model", "parts": [{**weather_call, "thoughtSignature": SIGNATURE}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "18C, sunny"}}}
            ],
        },
    ]
    assert [d["name"] for d in second_body["tools"][0]["functionDeclarations"]] == [
        "get_weather",
        "get_time",
    ]
    assert set(second_body) == {"systemInstruction", "contents", "tools"}
    third_contents = requests[2].body["contents"]
    assert third_contents[3] == {
        "role": "model",
        "parts": [{"text": "Now the time."}, {**time_call, "thoughtSignature": SECOND_SIGNATURE}],
    }


def _tool_turn(message: Any, result: str) -> list[dict[str, Any]]:
    (call,) = message.tool_calls
    return [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]


def test_a_dropped_signature_is_refused_as_gemini_would(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    """The mock is strict: a client that rewrites the call id loses the signature, and Gemini's
    400 comes through with its message."""
    weather_call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    gemini.answer(Reply(json=gemini_answer([{**weather_call, "thoughtSignature": SIGNATURE}])))
    first = client.chat.completions.create(model="gemini", messages=MESSAGES, tools=TOOLS)
    assistant = first.choices[0].message.model_dump(exclude_none=True)
    assistant["tool_calls"][0]["id"] = "call_rewritten"
    history = [
        *MESSAGES,
        assistant,
        {"role": "tool", "tool_call_id": "call_rewritten", "content": "18C"},
    ]

    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gemini", messages=history, tools=TOOLS)
    assert "thought_signature" in caught.value.message


def test_rate_limit_reaches_the_sdk_with_its_retry_delay(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "4s"}
    body = gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details=[retry])
    gemini.answer(Reply(429, json=body))

    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="gemini", messages=MESSAGES)
    assert caught.value.response.headers["retry-after"] == "4"
    assert caught.value.response.headers["retry-after-ms"] == "4000"


def test_a_pydantic_style_tool_schema_is_accepted_by_gemini(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    """$defs/$ref, anyOf with null, const and additionalProperties, as pydantic and MCP servers
    write them, reach the mock Gemini in the form it accepts (it answers 400 otherwise)."""
    gemini.answer(Reply(json=gemini_answer([{"text": GEMINI_TEXT}])))
    tools: Any = [{"type": "function", "function": {"name": "save", "parameters": TOOL_SCHEMA}}]

    completion = client.chat.completions.create(model="gemini", messages=MESSAGES, tools=tools)

    assert completion.choices[0].message.content == GEMINI_TEXT
    (exchange,) = gemini.gemini_requests()
    (declaration,) = exchange.body["tools"][0]["functionDeclarations"]
    parameters = declaration["parameters"]
    assert parameters["properties"]["kind"]["enum"] == ["person"]
    assert parameters["properties"]["work"]["nullable"] is True
    assert parameters["properties"]["home"]["properties"]["zip"]["pattern"] == "^[0-9]{5}$"
    assert "additionalProperties" not in json.dumps(parameters)


def test_parallel_tool_calls_false_keeps_one_call_and_the_loop_goes_on(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    """Gemini has no switch for it (agent frameworks send it routinely): the first call is
    kept, the cut is counted in a header, and the next turn, answering that one call, is one
    the mock Gemini accepts."""
    gemini.answer(Reply(json=gemini_tool_answer(text=False)))
    gemini.answer(Reply(json=gemini_answer([{"text": "18C in Paris."}])))

    raw = client.chat.completions.with_raw_response.create(
        model="gemini", messages=MESSAGES, tools=TOOLS, parallel_tool_calls=False
    )
    first = raw.parse()
    assert raw.headers["x-toolrelay-dropped-tool-calls"] == "1"
    assert first.choices[0].finish_reason == "tool_calls"
    assert _calls(first.choices[0].message.tool_calls) == EXPECTED_CALLS[:1]

    history = [*MESSAGES, *_tool_turn(first.choices[0].message, "18C")]
    second = client.chat.completions.create(
        model="gemini", messages=history, tools=TOOLS, parallel_tool_calls=False
    )
    assert second.choices[0].message.content == "18C in Paris."
    assert "parallel" not in json.dumps(gemini.gemini_requests()[0].body).lower()


def test_parallel_tool_calls_false_streams_one_call(
    gemini: MockGemini, client: openai.OpenAI
) -> None:
    gemini.answer(Reply(frames=gemini_tool_frames()), stream=True)

    with client.chat.completions.stream(
        model="gemini", messages=MESSAGES, tools=TOOLS, parallel_tool_calls=False
    ) as stream:
        final = stream.get_final_completion()

    assert final.choices[0].message.content == GEMINI_TEXT
    assert _calls(final.choices[0].message.tool_calls) == EXPECTED_CALLS[:1]
    assert final.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_reasoning_effort_high_asks_for_thinking_and_thoughts_come_as_reasoning(
    gemini: MockGemini, client: openai.OpenAI, stream: bool
) -> None:
    """gemini-2.5-flash takes a budget; thought-summary parts reach the client as
    `reasoning_content`, never in `content`, and thoughtsTokenCount as reasoning_tokens."""
    thought = {"text": "Weigh the question first.", "thought": True}
    parts = [thought, {"text": "Paris is sunny."}]
    if stream:
        frames = [Frame(gemini_answer([part], finish=None)) for part in parts]
        gemini.answer(Reply(frames=[*frames, Frame(gemini_answer([]))]), stream=True)
        chunks = list(
            client.chat.completions.create(
                model="gemini",
                messages=MESSAGES,
                reasoning_effort="high",
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
        content = "".join(delta.content or "" for delta in deltas)
        reasoning = "".join(
            (delta.model_extra or {}).get("reasoning_content", "") for delta in deltas
        )
        usage = chunks[-1].usage
    else:
        gemini.answer(Reply(json=gemini_answer(parts)))
        completion = client.chat.completions.create(
            model="gemini", messages=MESSAGES, reasoning_effort="high"
        )
        message = completion.choices[0].message
        content, reasoning = message.content or "", (message.model_extra or {})["reasoning_content"]
        usage = completion.usage
    assert (content, reasoning) == ("Paris is sunny.", "Weigh the question first.")
    assert usage is not None
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == USAGE_THOUGHTS
    sent = gemini.gemini_requests()[-1].body
    assert sent["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 16384,
        "includeThoughts": True,
    }
