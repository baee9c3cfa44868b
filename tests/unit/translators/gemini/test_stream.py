"""The Gemini stream state machine's edge cases: frames that give nothing, errors before and after
the first chunk, frames after the finish, calls spread over frames (the ordinary flows are the
transcripts)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import UpstreamProtocolError, UpstreamStatusError, UpstreamStreamError
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.base import ResponseContext
from app.translators.gemini.stream import GeminiStream
from tests.helpers.openai_stream import assert_openai_stream


def context(include_usage: bool = True, **fields: Any) -> ResponseContext:
    request = parse_chat_request(
        orjson.dumps(
            {
                "model": "gemini",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
                "stream_options": {"include_usage": include_usage},
                **fields,
            }
        )
    )
    return ResponseContext("chatcmpl-test", 1700000000, "gemini", request)


def frame(parts: list[Any] | None = None, finish: str | None = None, **fields: Any) -> SSEEvent:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    return SSEEvent(orjson.dumps({"candidates": [candidate], **fields}).decode())


def raw(gemini_frame: Any) -> SSEEvent:
    return SSEEvent(orjson.dumps(gemini_frame).decode())


def run(*events: SSEEvent, include_usage: bool = True) -> list[dict[str, Any]]:
    stream = GeminiStream(context(include_usage))
    chunks = [chunk for event in events for chunk in stream.feed(event)]
    return chunks + stream.finish()


def deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**chunk["choices"][0]["delta"], "finish": chunk["choices"][0]["finish_reason"]}
        if chunk["choices"]
        else {"usage": chunk["usage"]["total_tokens"]}
        for chunk in chunks
    ]


CALL = {"functionCall": {"name": "f", "args": {"a": 1}}}
ERROR = {"error": {"code": 429, "message": "Slow down.", "status": "RESOURCE_EXHAUSTED"}}


def test_frames_with_nothing_new_give_no_chunk_and_the_role_waits_for_content() -> None:
    stream = GeminiStream(context())
    assert stream.feed(raw({"usageMetadata": {"promptTokenCount": 3}})) == []
    assert stream.feed(frame([{"text": ""}, {"thought": True, "text": ""}])) == []
    assert stream.feed(frame(None)) == []
    assert stream.feed(raw({"candidates": "odd", "modelVersion": "x"})) == []
    first = stream.feed(frame([{"text": "Hi"}]))
    assert [chunk["choices"][0]["delta"] for chunk in first] == [
        {"role": "assistant", "content": ""},
        {"content": "Hi"},
    ]


def test_an_error_before_any_chunk_is_an_ordinary_status_error() -> None:
    stream = GeminiStream(context())
    stream.feed(raw({"usageMetadata": {"promptTokenCount": 3}}))
    with pytest.raises(UpstreamStatusError) as caught:
        stream.feed(raw(ERROR))
    assert (caught.value.status, caught.value.type, caught.value.message) == (
        429,
        "rate_limit_error",
        "Slow down.",
    )
    assert caught.value.retryable


def test_an_error_after_a_chunk_goes_in_band() -> None:
    stream = GeminiStream(context())
    stream.feed(frame([{"text": "Hi"}]))
    with pytest.raises(UpstreamStreamError) as caught:
        stream.feed(raw(ERROR))
    assert (caught.value.type, caught.value.code) == ("rate_limit_error", "RESOURCE_EXHAUSTED")


@pytest.mark.parametrize(
    ("gemini_error", "status"),
    [
        ({"message": "x"}, 502),
        ({"code": 503, "status": "UNAVAILABLE"}, 503),
        ({"status": "UNAVAILABLE"}, 503),
        ({"code": "bad", "status": ["?"]}, 502),
        ("a string", 502),
    ],
)
def test_odd_error_frames_still_become_errors(gemini_error: Any, status: int) -> None:
    with pytest.raises(UpstreamStatusError) as caught:
        GeminiStream(context()).feed(raw({"error": gemini_error}))
    assert caught.value.upstream_status == status
    assert caught.value.message


def test_frames_after_the_finish_only_update_usage() -> None:
    chunks = run(
        frame([{"text": "Hi"}], finish="STOP", usageMetadata={"promptTokenCount": 1}),
        frame([{"text": "late"}], finish="STOP"),
        raw({"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2}}),
    )
    assert deltas(chunks) == [
        {"role": "assistant", "content": "", "finish": None},
        {"content": "Hi", "finish": None},
        {"finish": "stop"},
        {"usage": 6},
    ]
    assert_openai_stream(chunks, include_usage=True)


def test_calls_from_separate_frames_keep_counting_and_come_before_the_finish() -> None:
    chunks = run(
        frame([CALL]),
        frame([{"text": "and"}, CALL, CALL]),
        frame([], finish="STOP"),
        include_usage=False,
    )
    calls = [
        delta_call
        for chunk in chunks
        for delta_call in chunk["choices"][0]["delta"].get("tool_calls", ())
    ]
    assert [(c["index"], "id" in c) for c in calls] == [
        (0, True),
        (0, False),
        (1, True),
        (1, False),
        (2, True),
        (2, False),
    ]
    assert len({c["id"] for c in calls if "id" in c}) == 3
    assert_openai_stream(chunks, include_usage=False)


def test_no_usage_chunk_unless_asked() -> None:
    chunks = run(frame([{"text": "Hi"}], finish="STOP"), include_usage=False)
    assert all(chunk["choices"] for chunk in chunks)


@pytest.mark.parametrize(
    "events",
    [
        [],
        [frame([{"text": "Hi"}])],
        [frame([CALL])],
        [raw({"usageMetadata": {"promptTokenCount": 3}})],
    ],
)
def test_a_stream_without_a_finish_is_cut_short(events: list[SSEEvent]) -> None:
    stream = GeminiStream(context())
    for event in events:
        stream.feed(event)
    with pytest.raises(UpstreamProtocolError) as caught:
        stream.finish()
    assert "finishReason" in caught.value.message


@pytest.mark.parametrize("data", ["not json", "[1]", '"text"'])
def test_a_frame_that_is_not_a_json_object_is_a_protocol_error(data: str) -> None:
    with pytest.raises(UpstreamProtocolError):
        GeminiStream(context()).feed(SSEEvent(data))


@pytest.mark.parametrize("parts", [None, [{"text": "Let me"}]])
def test_malformed_function_call_before_any_chunk_is_an_ordinary_502(parts: Any) -> None:
    with pytest.raises(UpstreamProtocolError) as caught:
        GeminiStream(context()).feed(frame(parts, finish="MALFORMED_FUNCTION_CALL"))
    assert (caught.value.status, caught.value.code) == (502, "malformed_function_call")


def test_parallel_tool_calls_false_streams_only_the_first_call() -> None:
    """Calls are held until the turn ends, so the cut is made before any call delta goes out,
    whether the calls come in one frame or several."""
    ctx = context(include_usage=False, parallel_tool_calls=False)
    stream = GeminiStream(ctx)
    second = {"functionCall": {"name": "g", "args": {}}}
    chunks = [*stream.feed(frame([CALL])), *stream.feed(frame([second], finish="STOP"))]
    chunks += stream.finish()
    assert_openai_stream(chunks, include_usage=False)
    calls = [
        call for chunk in chunks for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert {call["index"] for call in calls} == {0}
    assert [call["function"].get("name") for call in calls if "id" in call] == ["f"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
