"""ConverseStream events -> OpenAI chunks: every stream checked with assert_openai_stream and
folded into the non-stream answer of the same content (converse.py builds both from one list
of blocks), plus the stream's own cases: exception frames, cut-short streams, fragments."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.config import ProviderConfig
from app.errors import UpstreamProtocolError, UpstreamStatusError
from app.sse import SSEEvent
from app.translators.base import Chunk, ResponseContext, Target
from app.translators.bedrock.response import parse_response
from app.translators.bedrock.stream import BedrockStream
from app.translators.bedrock.translator import TRANSLATOR
from tests.helpers.openai_stream import assert_openai_stream, fold_stream
from tests.unit.translators.bedrock.converse import (
    CACHED_USAGE,
    answer,
    context,
    event,
    events,
    reasoning,
    redacted,
    text,
    tool_use,
)

CALL = tool_use("tooluse_1", "get_weather", {"city": "Paris", "note": "ünï \u2028 }"})
CALL_2 = tool_use("tooluse_2", "get_weather", {"city": "Oslo"})
BARE = tool_use("tooluse_3", "now", {})

SCENARIOS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "text": ([text("Hello there, friend.")], "end_turn"),
    "one call": ([CALL], "tool_use"),
    "parallel calls": ([CALL, CALL_2, BARE], "tool_use"),
    "text and calls": ([text("Let me check."), CALL, CALL_2], "tool_use"),
    "reasoning then call": (
        [reasoning("I should look.", "c2ln"), redacted("EmwK"), CALL],
        "tool_use",
    ),
    "reasoning then text": ([reasoning("Hmm.", "sig"), text("42")], "end_turn"),
    "no input at all": ([BARE], "tool_use"),
    "empty answer": ([], "end_turn"),
    **{
        reason: ([text("cut")], reason)
        for reason in (
            "stop_sequence",
            "max_tokens",
            "model_context_window_exceeded",
            "guardrail_intervened",
            "content_filtered",
        )
    },
}


def run(stream_events: list[SSEEvent], ctx: ResponseContext | None = None) -> list[Chunk]:
    stream = BedrockStream(ctx or context(stream=True))
    chunks = [chunk for item in stream_events for chunk in stream.feed(item)]
    return chunks + stream.finish()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_stream_keeps_every_invariant_and_folds_into_the_answer(name: str) -> None:
    content, stop_reason = SCENARIOS[name]
    chunks = run(events(content, stop_reason, CACHED_USAGE))
    assert_openai_stream(chunks, include_usage=True)
    expected = parse_response(answer(content, stop_reason, CACHED_USAGE), context(stream=True))
    assert fold_stream(chunks) == expected


def test_calls_counted_per_call_first_delta_carries_id_and_name_fragments_exact() -> None:
    """Bifrost #3475 dropped a call's last `}`: every fragment goes out as it came."""
    chunks = run(events([text("Hi"), CALL, CALL_2], "tool_use"))
    calls = [chunk["choices"][0]["delta"]["tool_calls"][0] for chunk in chunks[:-1]
             if "tool_calls" in chunk["choices"][0]["delta"]]  # fmt: skip
    assert calls[0] == {
        "index": 0,
        "id": "tooluse_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    first = "".join(c["function"]["arguments"] for c in calls if c["index"] == 0)
    assert first == '{"city":"Paris","note":"ünï \u2028 }"}'
    assert [c["index"] for c in calls if "id" in c] == [0, 1]  # content block indexes 1 and 2


def test_a_call_with_no_input_delta_ends_as_an_empty_object() -> None:
    chunks = run(events([BARE], "tool_use"))
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
    assert deltas[2] == {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}


def test_usage_only_from_metadata_and_only_when_asked() -> None:
    stream = BedrockStream(context(stream=True))
    for item in events([text("x")], usage=CACHED_USAGE)[:-1]:
        stream.feed(item)
    assert stream.usage() is None
    stream.feed(events([text("x")], usage=CACHED_USAGE)[-1])
    assert stream.usage() == {
        "prompt_tokens": 142,
        "completion_tokens": 7,
        "total_tokens": 149,
        "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 30},
    }
    plain = run(events([text("x")]), context(stream=False))
    assert all(chunk["choices"] for chunk in plain)


def test_role_chunk_waits_for_content() -> None:
    stream = BedrockStream(context(stream=True))
    assert stream.feed(event("messageStart", {"role": "assistant"})) == []
    first = stream.feed(
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}})
    )
    assert [chunk["choices"][0]["delta"] for chunk in first] == [
        {"role": "assistant", "content": ""},
        {"content": "a"},
    ]


@pytest.mark.parametrize(
    ("exception", "status", "error_type"),
    [
        ("throttlingException", 429, "rate_limit_error"),
        ("validationException", 400, "invalid_request_error"),
        ("modelStreamErrorException", 502, "api_error"),
        ("serviceUnavailableException", 502, "api_error"),
        ("internalServerException", 502, "api_error"),
    ],
)
def test_exception_before_any_chunk_is_an_error_with_its_status(
    exception: str, status: int, error_type: str
) -> None:
    stream = BedrockStream(context(stream=True))
    stream.feed(event("messageStart", {"role": "assistant"}))
    with pytest.raises(UpstreamStatusError) as caught:
        stream.feed(
            SSEEvent('{"message": "Too many requests, slow down."}', f"exception:{exception}")
        )
    error = caught.value
    assert (error.status, error.type, error.message) == (
        status,
        error_type,
        "Too many requests, slow down.",
    )
    assert error.retryable == (status != 400)


def test_exception_after_the_first_chunk_is_raised_too() -> None:
    """Portkey #1142 swallowed these: the error is raised, never dropped (the relay sends it
    in-band once something has gone out: tests/unit/translators/bedrock/test_relay.py)."""
    stream = BedrockStream(context(stream=True))
    for item in events([text("partial")])[:2]:
        stream.feed(item)
    with pytest.raises(UpstreamStatusError) as caught:
        stream.feed(SSEEvent('{"message": "Rate exceeded"}', "exception:throttlingException"))
    assert (caught.value.type, caught.value.message) == ("rate_limit_error", "Rate exceeded")
    assert (caught.value.status, caught.value.code) == (429, "ThrottlingException")


def test_error_frames_read_like_exceptions() -> None:
    stream = BedrockStream(context(stream=True))
    with pytest.raises(UpstreamStatusError) as caught:
        stream.feed(SSEEvent('{"message": "internal"}', "error:InternalFailure"))
    assert caught.value.status == 502


@pytest.mark.parametrize("cut", [1, 3, -2])
def test_a_stream_cut_short_is_a_protocol_error(cut: int) -> None:
    stream = BedrockStream(context(stream=True))
    for item in events([text("Hello"), CALL], "tool_use")[:cut]:
        stream.feed(item)
    with pytest.raises(UpstreamProtocolError):
        stream.finish()


@pytest.mark.parametrize("stop_reason", ["malformed_model_output", "malformed_tool_use"])
def test_malformed_output_ends_the_stream_as_an_error(stop_reason: str) -> None:
    with pytest.raises(UpstreamProtocolError, match=stop_reason):
        run(events([text("x")], stop_reason))


def test_tool_choice_none_drops_calls_in_the_stream() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather"}}]
    ctx = context(stream=True, tool_choice="none", tools=tools)
    chunks = run(events([text("Sunny."), CALL], "tool_use"), ctx)
    assert_openai_stream(chunks, include_usage=True)
    assert not any("tool_calls" in c["choices"][0]["delta"] for c in chunks if c["choices"])
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert ctx.headers == {"x-toolrelay-dropped-tool-calls": "1"}


def test_unknown_events_and_deltas_and_late_events_give_nothing() -> None:
    stream = BedrockStream(context(stream=True))
    quiet = [
        event("messageStart", {"role": "assistant"}),
        event("somethingNew", {"x": 1}),
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"citation": {}}}),
        event("contentBlockDelta", {"contentBlockIndex": 5, "delta": {"toolUse": {"input": "{}"}}}),
        event("contentBlockStop", {"contentBlockIndex": 0}),
    ]
    assert [chunk for item in quiet for chunk in stream.feed(item)] == []
    stream.feed(event("messageStop", {"stopReason": "end_turn"}))
    late = event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "late"}})
    assert stream.feed(late) == []


def test_structured_tool_answer_streams_as_content() -> None:
    provider = ProviderConfig.model_construct(
        kind="bedrock", base_url="http://b", api_key=None, headers={}
    )
    target = Target("c", "aws", provider, "m", structured_output="tool")
    plain = context(stream=True, response_format={"type": "json_object"})
    ctx = dataclasses.replace(plain, target=target)
    stream = TRANSLATOR.stream(ctx)
    content = [tool_use("t1", "json_response", {"n": 1})]
    chunks = [c for item in events(content, "tool_use") for c in stream.feed(item)]
    chunks += stream.finish()
    assert_openai_stream(chunks, include_usage=True)
    folded = fold_stream(chunks)["choices"][0]
    assert (folded["message"]["content"], folded["finish_reason"]) == ('{"n":1}', "stop")
