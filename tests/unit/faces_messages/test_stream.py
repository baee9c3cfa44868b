"""The Messages stream writer: chat chunks of every shape the per-kind translators emit become
a stream Claude Code and the Anthropic SDK accept (tests/helpers/anthropic_stream.py checks the
order and indexes, and the SDK's accumulator rebuilds it), equal to the non-stream answer the
same chunks fold to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.faces.messages.response import anthropic_message
from app.faces.messages.stream import MessagesStreamWriter
from tests.helpers.anthropic_stream import assert_anthropic_stream
from tests.helpers.openai_stream import fold_stream

MESSAGE_ID = "msg_0123"
MODEL = "gpt-4o-mini"
USAGE = {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-0123",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": [choice],
    }


def usage_chunk(usage: dict[str, Any] = USAGE) -> dict[str, Any]:
    return chunk({}) | {"choices": [], "usage": usage}


def call(
    index: int, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> dict[str, Any]:
    part: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        part |= {"id": call_id, "type": "function"}
        part["function"]["name"] = name
    return chunk({"tool_calls": [part]})


TEXT = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo."}),
    chunk({}, "stop"),
    usage_chunk(),
]
REASONING_THEN_TEXT = [
    chunk({"reasoning_content": "Think "}),
    chunk({"reasoning_content": "twice."}),
    chunk({"content": "Done."}),
    chunk({}, "stop"),
]
ONE_CALL = [
    chunk({"role": "assistant", "content": None}),
    call(0, "call_a", "read", '{"pa'),
    call(0, arguments='th": "a.'),
    call(0, arguments='txt"}'),
    chunk({}, "tool_calls"),
    usage_chunk(),
]
TEXT_THEN_PARALLEL_CALLS = [
    chunk({"content": "Reading both."}),
    call(0, "call_a", "read", '{"path": "a"}'),
    call(1, "call_b", "read", '{"path":'),
    call(1, arguments=' "b"}'),
    chunk({}, "tool_calls"),
]
INTERLEAVED_CALLS = [
    call(0, "call_a", "read", ""),
    call(1, "call_b", "write", '{"path": '),
    call(0, arguments='{"path": '),
    call(1, arguments='"b", "text": "x"}'),
    call(0, arguments='"a"}'),
    chunk({}, "tool_calls"),
]
TEXT_AFTER_CALL = [
    call(0, "call_a", "read", "{}"),
    chunk({"content": "and then"}),
    chunk({"content": " more"}),
    chunk({}, "tool_calls"),
]
CALL_WITH_STOP = [call(0, "call_a", "read", '{"path": "a"}'), chunk({}, "stop")]  # Gemini says STOP
CALL_WITHOUT_ARGUMENTS = [call(0, "call_a", "now"), chunk({}, "tool_calls")]
LENGTH = [chunk({"content": "Cut"}), chunk({}, "length")]
EMPTY = [chunk({}, "stop")]
CACHED = [
    chunk({"content": "Hi"}),
    chunk({}, "stop"),
    usage_chunk({**USAGE, "prompt_tokens_details": {"cached_tokens": 30}}),
]

STREAMS = {
    "text": TEXT,
    "reasoning-then-text": REASONING_THEN_TEXT,
    "one-call": ONE_CALL,
    "text-then-parallel-calls": TEXT_THEN_PARALLEL_CALLS,
    "interleaved-calls": INTERLEAVED_CALLS,
    "call-with-stop": CALL_WITH_STOP,
    "call-without-arguments": CALL_WITHOUT_ARGUMENTS,
    "length": LENGTH,
    "empty": EMPTY,
    "cached-usage": CACHED,
}


def write(chunks: list[dict[str, Any]], *, one_by_one: bool = True) -> list[dict[str, Any]]:
    writer = MessagesStreamWriter(MESSAGE_ID, MODEL)
    batches = [[item] for item in chunks] if one_by_one else [chunks]
    events = [event for batch in batches for event in writer.feed(batch)]
    return events + writer.finish()


@pytest.mark.parametrize("chunks", STREAMS.values(), ids=STREAMS.keys())
def test_the_sdk_rebuilds_the_same_message_as_the_non_stream_answer(
    chunks: list[dict[str, Any]],
) -> None:
    rebuilt = assert_anthropic_stream(write(chunks))
    whole = anthropic_message(fold_stream(chunks))
    assert rebuilt["content"] == whole["content"]
    assert (rebuilt["stop_reason"], rebuilt["usage"]) == (whole["stop_reason"], whole["usage"])
    assert (rebuilt["id"], rebuilt["model"]) == (MESSAGE_ID, MODEL)


@pytest.mark.parametrize("chunks", STREAMS.values(), ids=STREAMS.keys())
def test_batching_does_not_change_the_events(chunks: list[dict[str, Any]]) -> None:
    assert write(chunks, one_by_one=False) == write(chunks)


def test_text_streams_as_it_comes() -> None:
    events = write(TEXT)
    assert [event["type"] for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert [
        event["delta"]["text"] for event in events if event["type"] == "content_block_delta"
    ] == ["Hel", "lo."]
    assert events[-2]["usage"] == {"input_tokens": 50, "output_tokens": 20}


def test_the_first_call_streams_its_fragments_and_later_calls_come_whole_at_the_end() -> None:
    deltas = [
        (e["index"], e["delta"]["partial_json"])
        for e in write(TEXT_THEN_PARALLEL_CALLS)
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    assert deltas == [(1, '{"path": "a"}'), (2, '{"path": "b"}')]


def test_interleaved_fragments_each_reach_their_own_call() -> None:
    blocks = assert_anthropic_stream(write(INTERLEAVED_CALLS))["content"]
    assert [(b["id"], b["input"]) for b in blocks] == [
        ("call_a", {"path": "a"}),
        ("call_b", {"path": "b", "text": "x"}),
    ]


@pytest.mark.parametrize(
    ("chunks", "stop_reason"),
    [
        (TEXT, "end_turn"),
        (ONE_CALL, "tool_use"),
        (CALL_WITH_STOP, "tool_use"),
        (LENGTH, "max_tokens"),
        ([chunk({"content": "no"}), chunk({}, "content_filter")], "refusal"),
    ],
    ids=["stop", "tool-calls", "call-with-stop", "length", "content-filter"],
)
def test_stop_reason(chunks: list[dict[str, Any]], stop_reason: str) -> None:
    assert write(chunks)[-2]["delta"] == {"stop_reason": stop_reason, "stop_sequence": None}


def test_cached_prompt_tokens_are_reported_apart() -> None:
    assert write(CACHED)[-2]["usage"] == {
        "input_tokens": 20,
        "output_tokens": 20,
        "cache_read_input_tokens": 30,
    }


def test_reasoning_is_a_thinking_block_never_text() -> None:
    content = assert_anthropic_stream(write(REASONING_THEN_TEXT))["content"]
    assert content == [
        {"type": "thinking", "thinking": "Think twice.", "signature": ""},
        {"type": "text", "text": "Done."},
    ]
    assert json.dumps(content).count("Think twice.") == 1


def test_text_after_a_call_comes_after_it_whole() -> None:
    """Rare (a chat stream has no order between text and calls to keep in a non-stream
    answer), but a stream keeps the order it got."""
    content = assert_anthropic_stream(write(TEXT_AFTER_CALL))["content"]
    assert content == [
        {"type": "tool_use", "id": "call_a", "name": "read", "input": {}},
        {"type": "text", "text": "and then more"},
    ]
