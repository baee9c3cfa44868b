"""Canned upstream answers for integration and e2e tests: the same two parallel tool calls as an
OpenAI completion, OpenAI chunks, an Anthropic message and Anthropic stream events."""

from __future__ import annotations

import json
from typing import Any

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
TIME_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}, "hours24": {"type": "boolean"}},
            "required": ["timezone", "hours24"],
        },
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]

# (id, name, arguments JSON) of the two calls every canned answer makes.
CALLS = [
    ("call_weather_01", "get_weather", '{"city": "Paris", "unit": "celsius"}'),
    ("call_time_02", "get_time", '{"timezone": "Asia/Tokyo", "hours24": true}'),
]
USAGE = {"prompt_tokens": 82, "completion_tokens": 41, "total_tokens": 123}
UPSTREAM_ID = "chatcmpl-upstream-7"
UPSTREAM_MODEL = "gpt-4o-mini-2024-07-18"


def openai_tool_completion() -> dict[str, Any]:
    """A non-stream OpenAI answer: two parallel calls, no text."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in CALLS
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls, "refusal": None}
    return {
        "id": UPSTREAM_ID,
        "object": "chat.completion",
        "created": 1727346178,
        "model": UPSTREAM_MODEL,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}
        ],
        "usage": USAGE,
        "system_fingerprint": "fp_test",
    }


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {
        "id": UPSTREAM_ID,
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": UPSTREAM_MODEL,
        "system_fingerprint": "fp_test",
        "choices": [choice],
    }


def openai_tool_chunks(*, include_usage: bool = False) -> list[dict[str, Any]]:
    """The same answer streamed as OpenAI does (PROTOCOLS.md A.5), arguments in 3 fragments."""
    chunks = [_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(CALLS):
        function = {"name": name, "arguments": ""}
        first = {"index": index, "id": call_id, "type": "function", "function": function}
        chunks.append(_chunk({"tool_calls": [first]}))
        third = len(arguments) // 3
        for fragment in (arguments[:third], arguments[third : 2 * third], arguments[2 * third :]):
            later = {"index": index, "function": {"arguments": fragment}}
            chunks.append(_chunk({"tool_calls": [later]}))
    chunks.append(_chunk({}, "tool_calls"))
    if include_usage:
        usage_chunk = _chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = USAGE
        chunks.append(usage_chunk)
    return chunks


def openai_text_chunks(*parts: str) -> list[dict[str, Any]]:
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": part}) for part in parts]
    return [*chunks, _chunk({}, "stop")]


ANTHROPIC_MESSAGE_ID = "msg_019Q1hrJbZG26Fb9BQhrkHEr"
ANTHROPIC_TEXT = "I'll check both."


def anthropic_tool_message() -> dict[str, Any]:
    """A non-stream Anthropic answer (PROTOCOLS.md B.4): text, then the two tool_use blocks."""
    content: list[dict[str, Any]] = [{"type": "text", "text": ANTHROPIC_TEXT}]
    content += [
        {"type": "tool_use", "id": call_id, "name": name, "input": json.loads(arguments)}
        for call_id, name, arguments in CALLS
    ]
    return {
        "id": ANTHROPIC_MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 82, "output_tokens": 41},
    }


def anthropic_tool_events() -> list[dict[str, Any]]:
    """The same answer as Anthropic streams it (PROTOCOLS.md B.5), with a ping thrown in."""
    message = anthropic_tool_message() | {"content": [], "stop_reason": None}
    message["usage"] = {"input_tokens": 82, "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        _text_delta(0, ANTHROPIC_TEXT[:6]),
        _text_delta(0, ANTHROPIC_TEXT[6:]),
        {"type": "content_block_stop", "index": 0},
    ]
    for block, (call_id, name, arguments) in enumerate(CALLS, start=1):
        tool_use = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": block, "content_block": tool_use})
        half = len(arguments) // 2
        for fragment in ("", arguments[:half], arguments[half:]):
            delta = {"type": "input_json_delta", "partial_json": fragment}
            events.append({"type": "content_block_delta", "index": block, "delta": delta})
        events.append({"type": "content_block_stop", "index": block})
    stop = {"stop_reason": "tool_use", "stop_sequence": None}
    events.append({"type": "message_delta", "delta": stop, "usage": {"output_tokens": 41}})
    events.append({"type": "message_stop"})
    return events


def _text_delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "text_delta", "text": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}
