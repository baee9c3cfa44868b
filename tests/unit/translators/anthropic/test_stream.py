"""The Anthropic stream state machine's edge cases: unknown and late events, usage merging,
start-carried content, in-band errors, malformed and cut-short streams (the ordinary flows are
the transcripts)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import UpstreamProtocolError, UpstreamStreamError
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.anthropic.stream import AnthropicStream
from app.translators.base import ResponseContext

STREAM_REQUEST = parse_chat_request(
    b'{"model":"claude","messages":[{"role":"user","content":"hi"}],"stream":true,'
    b'"stream_options":{"include_usage":true}}'
)
CTX = ResponseContext("chatcmpl-test", 1700000000, "claude", STREAM_REQUEST)


def event(anthropic_event: dict[str, Any]) -> SSEEvent:
    return SSEEvent(orjson.dumps(anthropic_event).decode(), anthropic_event.get("type"))


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "content": [],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 4, "output_tokens": 1},
    },
}
STOP = {"type": "message_stop"}


def tool_start(index: int, tool_input: Any = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": tool_input or {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def deltas(*anthropic_events: dict[str, Any], finish: bool = True) -> list[dict[str, Any]]:
    """The choice deltas (plus finish reason) and usage a stream of events produces."""
    stream = AnthropicStream(CTX)
    chunks = [chunk for item in anthropic_events for chunk in stream.feed(event(item))]
    if finish:
        chunks += stream.finish()
    return [
        {**chunk["choices"][0]["delta"], "finish": chunk["choices"][0]["finish_reason"]}
        if chunk["choices"]
        else {"usage": chunk["usage"]}
        for chunk in chunks
    ]


ROLE = {"role": "assistant", "content": "", "finish": None}


def test_ping_unknown_events_and_unknown_deltas_give_nothing() -> None:
    assert deltas(
        {"type": "ping"},
        START,
        {"type": "brand_new_event", "payload": [1]},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "mystery"}},
        {"type": "content_block_start", "index": 0},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "mystery_delta", "x": 1}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta"}},
        {"type": "content_block_delta", "index": 0, "delta": None},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },  # not a tool block
        STOP,
        finish=False,
    ) == [ROLE, {"finish": "stop"}]


def thinking_events(index: int, *fragments: str, signature: str = "c2ln") -> list[dict[str, Any]]:
    block = {"type": "thinking", "thinking": "", "signature": ""}
    events: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": index, "content_block": block}
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "thinking_delta", "thinking": text},
        }
        for text in fragments
    ]
    half = len(signature) // 2
    events += [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": part},
        }
        for part in (signature[:half], signature[half:])
    ]
    return [*events, {"type": "content_block_stop", "index": index}]


def test_a_thinking_block_streams_as_reasoning_then_arrives_whole_at_its_stop() -> None:
    assert deltas(START, *thinking_events(0, "Paris", "", " then."), STOP, finish=False) == [
        ROLE,
        {"reasoning_content": "Paris", "finish": None},
        {"reasoning_content": " then.", "finish": None},
        {
            "thinking_blocks": [
                {"index": 0, "type": "thinking", "thinking": "Paris then.", "signature": "c2ln"}
            ],
            "finish": None,
        },
        {"finish": "stop"},
    ]


def test_interleaved_thinking_blocks_are_numbered_apart_from_content_and_calls() -> None:
    """thinking, text, thinking, tool_use (interleaved thinking): the blocks are thinking
    indexes 0 and 1, the call tool index 0, whatever their content-block indexes."""
    redacted = {"type": "redacted_thinking", "data": "EmwK"}
    result = deltas(
        START,
        *thinking_events(0, "First."),
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "text", "text": "Hi"},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": redacted},
        {"type": "content_block_stop", "index": 2},
        tool_start(3, {"city": "Paris"}),
        {"type": "content_block_stop", "index": 3},
        STOP,
        finish=False,
    )
    blocks = [delta["thinking_blocks"] for delta in result if "thinking_blocks" in delta]
    assert blocks == [
        [{"index": 0, "type": "thinking", "thinking": "First.", "signature": "c2ln"}],
        [{"index": 1, "type": "redacted_thinking", "data": "EmwK"}],
    ]
    assert [d["tool_calls"][0]["index"] for d in result if "tool_calls" in d] == [0, 0]
    assert result[-1] == {"finish": "tool_calls"}


def test_a_thinking_block_that_never_stopped_is_sent_before_the_finish() -> None:
    events = thinking_events(0, "Cut")[:-1]  # no content_block_stop
    result = deltas(START, *events, STOP, finish=False)
    assert result[-2]["thinking_blocks"][0]["thinking"] == "Cut"
    assert result[-1] == {"finish": "stop"}


def test_message_delta_usage_overrides_message_start_and_the_last_stop_reason_wins() -> None:
    assert deltas(
        START,
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 5},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"input_tokens": 12, "cache_read_input_tokens": None, "output_tokens": 9},
        },
        {"type": "message_delta", "delta": {"stop_reason": None}, "usage": None},
        STOP,
    )[-2:] == [
        {"finish": "length"},
        {
            "usage": {
                "prompt_tokens": 16,
                "completion_tokens": 9,
                "total_tokens": 25,
                "prompt_tokens_details": {"cached_tokens": 4},
            }
        },
    ]


def test_usage_only_in_message_delta() -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "content": []}}
    assert deltas(
        start,
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 12, "output_tokens": 6},
        },
        STOP,
    )[-1] == {
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 6,
            "total_tokens": 18,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
    }


def test_start_content_is_passed_on_like_a_delta() -> None:
    assert (
        deltas(
            START,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "Hm."},
            },
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": "Hi"},
            },
            tool_start(2, {"x": 1}),  # no deltas follow: the start input is the arguments
            {"type": "content_block_stop", "index": 2},
            STOP,
        )[1:-1]
        == [
            {"reasoning_content": "Hm.", "finish": None},
            {"content": "Hi", "finish": None},
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "toolu_2",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                ],
                "finish": None,
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"x":1}'}}], "finish": None},
            {  # its block never stopped: sent whole before the finish
                "thinking_blocks": [
                    {"index": 0, "type": "thinking", "thinking": "Hm.", "signature": ""}
                ],
                "finish": None,
            },
            {"finish": "tool_calls"},
        ]
    )


def test_a_call_that_never_closed_gets_its_arguments_before_the_finish() -> None:
    assert deltas(START, tool_start(0), STOP, finish=False)[-2:] == [
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}], "finish": None},
        {"finish": "tool_calls"},
    ]


def test_a_streamed_call_gets_no_extra_arguments_at_its_stop() -> None:
    fragment = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
    }
    produced = deltas(
        START,
        tool_start(0),
        fragment,
        {"type": "content_block_stop", "index": 0},
        STOP,
        finish=False,
    )
    assert [item.get("tool_calls") for item in produced[2:]] == [
        [{"index": 0, "function": {"arguments": '{"a": 1}'}}],
        None,
    ]


def test_events_after_message_stop_are_ignored() -> None:
    late = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
    error = {"type": "error", "error": {"type": "api_error", "message": "late"}}
    assert deltas(START, STOP, late, error, STOP, START, finish=False) == [ROLE, {"finish": "stop"}]


def test_a_second_message_start_is_ignored() -> None:
    assert deltas(START, START, STOP, finish=False) == [ROLE, {"finish": "stop"}]


def test_a_message_start_without_a_message_still_starts_the_answer() -> None:
    assert deltas({"type": "message_start", "message": None}, STOP)[0] == ROLE


@pytest.mark.parametrize(
    "anthropic_error",
    [
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"type": "error", "error": {"type": "api_error", "message": ""}},
        {"type": "error"},
    ],
)
def test_error_events_raise_in_band_errors(anthropic_error: dict[str, Any]) -> None:
    with pytest.raises(UpstreamStreamError) as caught:
        deltas(START, anthropic_error)
    error = caught.value.body()["error"]
    assert error["type"] in {"overloaded_error", "api_error"}
    assert error["message"] in {
        "Overloaded",
        "the anthropic upstream reported an error during the stream",
    }


def test_an_error_before_message_start_is_still_an_error() -> None:
    with pytest.raises(UpstreamStreamError):
        deltas({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


@pytest.mark.parametrize(
    "bad_events",
    [
        [tool_start(0)],
        [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}],
        [STOP],
        [
            START,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "name": "f"},
            },
        ],
        [
            START,
            {
                "type": "content_block_start",
                "content_block": {"type": "tool_use", "id": "t", "name": "f"},
            },
        ],
    ],
    ids=[
        "block-before-start",
        "delta-before-start",
        "stop-before-start",
        "tool-without-id",
        "tool-without-index",
    ],
)
def test_events_out_of_order_or_malformed_are_protocol_errors(
    bad_events: list[dict[str, Any]],
) -> None:
    with pytest.raises(UpstreamProtocolError):
        deltas(*bad_events)


@pytest.mark.parametrize("event_data", ["not json", "[1]", '"message_stop"'])
def test_undecodable_events_are_protocol_errors(event_data: str) -> None:
    with pytest.raises(UpstreamProtocolError):
        AnthropicStream(CTX).feed(SSEEvent(event_data, "message_start"))


def test_an_unnamed_or_oddly_typed_event_is_skipped() -> None:
    stream = AnthropicStream(CTX)
    assert stream.feed(SSEEvent('{"type": ["x"]}')) == []
    assert stream.feed(SSEEvent('{"no_type": 1}')) == []


@pytest.mark.parametrize("events", [[], [START], [START, tool_start(0)]])
def test_a_stream_cut_short_raises_at_finish(events: list[dict[str, Any]]) -> None:
    with pytest.raises(UpstreamProtocolError):
        deltas(*events)


def test_no_usage_chunk_unless_asked() -> None:
    request = parse_chat_request(
        b'{"model":"claude","messages":[{"role":"user","content":"hi"}],"stream":true}'
    )
    stream = AnthropicStream(ResponseContext("chatcmpl-test", 1, "claude", request))
    stream.feed(event(START))
    stream.feed(event(STOP))
    assert stream.finish() == []
