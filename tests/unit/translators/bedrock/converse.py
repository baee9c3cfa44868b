"""Converse answers for the response and stream tests, each built once as content blocks and
turned into both forms Bedrock would send: the ConverseResponse, and the ConverseStream events
(text and reasoning without a start event, a call's input as string fragments, the first one
empty, usage in the metadata after messageStop). Both are checked against botocore's output
shapes, so the tests feed the translator what Bedrock's definition allows."""

from __future__ import annotations

from typing import Any

import orjson

from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.base import ResponseContext
from tests.unit.translators.bedrock.shapes import output_problems

USAGE = {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}
CACHED_USAGE = {
    **USAGE,
    "cacheReadInputTokens": 100,
    "cacheWriteInputTokens": 30,
    "totalTokens": 149,
}
EVENT_SHAPES = {
    "messageStart": "MessageStartEvent",
    "contentBlockStart": "ContentBlockStartEvent",
    "contentBlockDelta": "ContentBlockDeltaEvent",
    "contentBlockStop": "ContentBlockStopEvent",
    "messageStop": "MessageStopEvent",
    "metadata": "ConverseStreamMetadataEvent",
}


def context(stream: bool = False, **fields: Any) -> ResponseContext:
    wire: dict[str, Any] = {"model": "claude", "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        wire |= {"stream": True, "stream_options": {"include_usage": True}}
    request = parse_chat_request(orjson.dumps(wire | fields))
    return ResponseContext("chatcmpl-test", 1700000000, "claude", request)


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": call_id, "name": name, "input": tool_input}}


def reasoning(value: str, signature: str) -> dict[str, Any]:
    return {"reasoningContent": {"reasoningText": {"text": value, "signature": signature}}}


def redacted(data: str) -> dict[str, Any]:
    return {"reasoningContent": {"redactedContent": data}}


def answer(
    content: list[dict[str, Any]], stop_reason: str = "end_turn", usage: Any = None
) -> bytes:
    """A ConverseResponse, checked against botocore's shape."""
    response = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": usage or USAGE,
        "metrics": {"latencyMs": 321},
    }
    assert output_problems("ConverseResponse", response) == []
    return orjson.dumps(response)


def events(
    content: list[dict[str, Any]], stop_reason: str = "end_turn", usage: Any = None
) -> list[SSEEvent]:
    """The same answer as ConverseStream events, as the eventstream decoder yields them."""
    stream: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        stream += _block_events(index, block)
    stream.append(("messageStop", {"stopReason": stop_reason}))
    metadata = {"usage": usage or USAGE, "metrics": {"latencyMs": 321}}
    stream.append(("metadata", metadata))
    for event_type, payload in stream:
        assert output_problems(EVENT_SHAPES[event_type], payload) == [], (event_type, payload)
    return [event(event_type, payload) for event_type, payload in stream]


def event(event_type: str, payload: dict[str, Any]) -> SSEEvent:
    return SSEEvent(orjson.dumps({**payload, "p": "abcdefgh"}).decode(), event_type)


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    deltas: list[dict[str, Any]] = []
    start: list[tuple[str, dict[str, Any]]] = []
    if "text" in block:
        deltas = [{"text": piece} for piece in _halves(block["text"])]
    elif "toolUse" in block:
        call = block["toolUse"]
        begin = {"toolUse": {"toolUseId": call["toolUseId"], "name": call["name"]}}
        start = [("contentBlockStart", {"contentBlockIndex": index, "start": begin})]
        arguments = orjson.dumps(call["input"]).decode() if call["input"] else ""
        pieces = ["", *_halves(arguments)] if arguments else []
        deltas = [{"toolUse": {"input": piece}} for piece in pieces]
    else:
        deltas = _reasoning_deltas(block["reasoningContent"])
    middle = [("contentBlockDelta", {"contentBlockIndex": index, "delta": d}) for d in deltas]
    return [*start, *middle, ("contentBlockStop", {"contentBlockIndex": index})]


def _reasoning_deltas(block: dict[str, Any]) -> list[dict[str, Any]]:
    if "redactedContent" in block:
        return [{"reasoningContent": {"redactedContent": block["redactedContent"]}}]
    reasoning_text = block["reasoningText"]
    pieces = [{"reasoningContent": {"text": piece}} for piece in _halves(reasoning_text["text"])]
    return [*pieces, {"reasoningContent": {"signature": reasoning_text["signature"]}}]


def _halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [piece for piece in (value[:middle], value[middle:]) if piece]
