"""A chat completion -> an Anthropic Message, and the tables both answer shapes share: stop
reasons, usage and the message id."""

from __future__ import annotations

from typing import Any

import orjson

from app.errors import UpstreamProtocolError

# finish_reason -> stop_reason; any tool call makes it `tool_use` whatever the upstream said.
STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def message_id(completion_id: str) -> str:
    return "msg_" + completion_id.removeprefix("chatcmpl-")


def stop_reason(finish_reason: Any, *, called_tools: bool) -> str:
    if called_tools:
        return "tool_use"
    return STOP_REASONS.get(finish_reason, "end_turn")


def anthropic_usage(usage: Any) -> dict[str, Any]:
    """Chat usage in Anthropic's terms: `input_tokens` leaves out what was read from and
    written to cache, which have their own counts; a priced model's `cost` kept."""
    if not isinstance(usage, dict):
        return {"input_tokens": 0, "output_tokens": 0}
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    converted: dict[str, Any] = {
        "input_tokens": (usage.get("prompt_tokens") or 0) - cached - written,
        "output_tokens": usage.get("completion_tokens") or 0,
    }
    if cached:
        converted["cache_read_input_tokens"] = cached
    if written:
        converted["cache_creation_input_tokens"] = written
    if "cost" in usage:
        converted["cost"] = usage["cost"]
    return converted


def message_shell(message_id: str, model: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def anthropic_message(completion: dict[str, Any]) -> dict[str, Any]:
    """Reasoning first (as a thinking block with no signature: only Anthropic signs), then
    text, then one tool_use per call with its arguments parsed."""
    choice = completion["choices"][0]
    chat_message = choice["message"]
    content: list[dict[str, Any]] = []
    if chat_message.get("reasoning_content"):
        thinking = chat_message["reasoning_content"]
        content.append({"type": "thinking", "thinking": thinking, "signature": ""})
    if chat_message.get("content"):
        content.append({"type": "text", "text": chat_message["content"]})
    calls = chat_message.get("tool_calls") or []
    content += [tool_use(call["id"], call["function"]) for call in calls]
    message = message_shell(message_id(completion["id"]), completion["model"])
    message["content"] = content
    message["stop_reason"] = stop_reason(choice.get("finish_reason"), called_tools=bool(calls))
    message["usage"] = anthropic_usage(completion.get("usage"))
    return message


def tool_use(call_id: str, function: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": function["name"],
        "input": tool_input(function.get("arguments") or "{}"),
    }


def tool_input(arguments: str) -> Any:
    """A call's arguments as the object Anthropic's `input` must be. The tool-call layer has
    already recovered or flagged broken JSON; what is still not an object cannot be sent."""
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(
            "the upstream's tool call arguments are not valid JSON"
        ) from None
    if not isinstance(parsed, dict):
        raise UpstreamProtocolError("the upstream's tool call arguments are not a JSON object")
    return parsed
