"""Anthropic threads on translated kinds: what a continue rebuilds, what a create keeps, and a
stream folded into the message it makes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import InvalidRequest
from app.faces.messages.errors import anthropic_error_json
from app.faces.messages.framing import MessagesEncoder
from app.faces.messages.response import anthropic_message
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.messages.thread import MessageFold, Thread, continued, kept, not_found, thread_of

USER = {"role": "user", "content": "Weather in Paris?"}
RECORD: dict[str, Any] = {
    "system": "be brief",
    "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
    "messages": [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
        },
    ],
}
RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
}


@pytest.mark.parametrize(
    ("thread", "expected"),
    [
        ({"type": "create"}, Thread(None)),
        ({"type": "continue", "previous_message_id": "msg_1"}, Thread("msg_1")),
    ],
)
def test_thread_kinds(thread: dict[str, Any], expected: Thread) -> None:
    assert thread_of({"thread": thread}) == expected


@pytest.mark.parametrize("thread", ["create", {"type": "continue"}, {"type": "fork"}, []])
def test_a_malformed_thread_is_refused_by_name(thread: Any) -> None:
    with pytest.raises(InvalidRequest) as refused:
        thread_of({"thread": thread})
    assert refused.value.param == "thread"


def test_continue_puts_the_conversation_first_and_its_system_and_tools_apply() -> None:
    body = {"model": "m", "max_tokens": 9, "messages": [RESULT], "thread": {"type": "continue"}}
    whole = continued(body, RECORD)
    assert whole["messages"] == [*RECORD["messages"], RESULT]
    assert whole["system"] == "be brief"
    assert whole["tools"] == RECORD["tools"]
    assert "thread" not in whole


def test_the_request_s_own_system_and_tools_win() -> None:
    body = {"messages": [RESULT], "system": "mine", "tools": []}
    whole = continued(body, RECORD)
    assert whole["system"] == "mine"
    assert whole["tools"] == []


def test_kept_holds_the_whole_conversation_and_the_answer() -> None:
    answer = {"id": "msg_2", "content": [{"type": "text", "text": "sunny"}]}
    record = kept({"system": "s", "messages": [USER]}, answer)
    assert record == {
        "system": "s",
        "tools": None,
        "messages": [USER, {"role": "assistant", "content": answer["content"]}],
    }


def test_thread_not_found_has_the_code_the_sdk_recovers_from() -> None:
    error = orjson.loads(anthropic_error_json(not_found("msg_x")))["error"]
    assert error["type"] == "invalid_request_error"
    assert error["details"] == {"error_code": "thread_not_found"}
    assert "thread.previous_message_id" in error["message"]


def test_a_stream_folds_into_the_message_a_non_stream_answer_would_be() -> None:
    writer = MessagesStreamWriter("msg_1", "m")
    fold = MessageFold()
    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "f", "arguments": ""}}
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]},
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]},
                }
            ]
        },
    ]
    for chunk in chunks:
        fold.feed(writer.feed([chunk]))
    fold.feed(writer.finish())
    assert fold.content == [
        {"type": "text", "text": "Hello"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
    ]


def _call_delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **fields}]}}]}


def test_a_streamed_answer_with_text_and_parallel_calls_is_kept_as_the_client_got_it() -> None:
    """What the encoder sends at the end (the live call's stop, the calls held after it) is
    folded too, before the end goes out: the kept turn equals the non-stream answer's, every
    call with its input."""
    fold = MessageFold()
    encoder = MessagesEncoder(MessagesStreamWriter("msg_1", "m"), fold)
    weather, clock = ('{"city": "Paris"}', '{"tz": "Asia/Tokyo"}')
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Checking."}}]},
        _call_delta(0, id="t1", type="function", function={"name": "weather", "arguments": ""}),
        _call_delta(0, function={"arguments": weather[:5]}),
        _call_delta(1, id="t2", type="function", function={"name": "clock", "arguments": ""}),
        _call_delta(0, function={"arguments": weather[5:]}),
        _call_delta(1, function={"arguments": clock}),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    for chunk in chunks:
        encoder.encode([chunk])
    encoder.settle()  # what the face runs before the end goes out (the turn is kept then)
    kept_before_end = list(fold.content)
    assert encoder.end().endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert fold.content == kept_before_end
    calls = [("t1", "weather", weather), ("t2", "clock", clock)]
    whole = {
        "id": "chatcmpl-1",
        "model": "m",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "Checking.",
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in calls
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    assert fold.content == anthropic_message(whole)["content"]
    assert [block.get("input") for block in fold.content] == [
        None,
        *map(orjson.loads, (weather, clock)),
    ]
