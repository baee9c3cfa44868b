"""Anthropic Messages answers -> OpenAI: a message JSON to a ChatCompletion, with the stop
reason and usage tables the stream shares, and an error answer to a ProxyError (B.4, B.8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import orjson

from app.errors import ProxyError, UpstreamProtocolError, UpstreamStatusError
from app.openai_types import FinishReason, ToolCallOut, Usage
from app.translators.base import ResponseContext, load_json_object, retry_headers
from app.translators.chunks import ChunkBuilder, make_completion, make_usage, tool_call

# Anthropic `stop_reason` -> OpenAI `finish_reason` (B.10). Anything else, null included, is
# "stop". `pause_turn` (a server tool paused a long turn) has no OpenAI meaning; "stop" is the
# least surprising. `refusal` maps to content_filter, which openai-python's parse() raises on.
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

# Anthropic error `type` -> the OpenAI error `type` clients branch on (B.8); others keep the
# default for their status. `overloaded_error` is kept: OpenAI has no name for it and clients
# of Anthropic-backed proxies look for it.
ERROR_TYPES: dict[str, str] = {
    "invalid_request_error": "invalid_request_error",
    "request_too_large": "invalid_request_error",
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "not_found_error": "not_found_error",
    "rate_limit_error": "rate_limit_error",
    "billing_error": "insufficient_quota",
    "timeout_error": "timeout_error",
    "api_error": "api_error",
    "overloaded_error": "overloaded_error",
}


def finish_reason(stop_reason: Any, has_tool_calls: bool) -> FinishReason:
    """The OpenAI finish reason. Calls were made -> `tool_calls` even if Anthropic says
    `end_turn`, since agent loops branch on it (F.5); `tool_use` with no call we passed on
    (only server tools ran) -> `stop`, or the client would look for calls that are not there."""
    reason = STOP_REASONS.get(stop_reason, "stop") if isinstance(stop_reason, str) else "stop"
    if reason == "stop" and has_tool_calls:
        return "tool_calls"
    if reason == "tool_calls" and not has_tool_calls:
        return "stop"
    return reason


def openai_usage(anthropic_usage: Mapping[str, Any]) -> Usage:
    """Anthropic's `input_tokens` excludes cache reads and writes; OpenAI's `prompt_tokens`
    includes them, with reads as `cached_tokens` (B.10) and writes, when reported, as
    `cache_write_tokens` (billed at 1.25x input: a cost needs them apart). Counts may be
    null: read as 0."""
    cache_read = _count(anthropic_usage, "cache_read_input_tokens")
    cache_write = _count(anthropic_usage, "cache_creation_input_tokens")
    prompt_tokens = _count(anthropic_usage, "input_tokens") + cache_write + cache_read
    details = anthropic_usage.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return make_usage(
        prompt_tokens,
        _count(anthropic_usage, "output_tokens"),
        cached_tokens=cache_read,
        reasoning_tokens=thinking if isinstance(thinking, int) else None,
        cache_write_tokens=cache_write
        if _reported(anthropic_usage, "cache_creation_input_tokens")
        else None,
    )


def _reported(anthropic_usage: Mapping[str, Any], key: str) -> bool:
    return isinstance(anthropic_usage.get(key), int)


def _count(anthropic_usage: Mapping[str, Any], key: str) -> int:
    value = anthropic_usage.get(key)
    return value if isinstance(value, int) else 0


def error_type(anthropic_error: Mapping[str, Any]) -> str | None:
    upstream_type = anthropic_error.get("type")
    return ERROR_TYPES.get(upstream_type) if isinstance(upstream_type, str) else None


# --- non-stream ------------------------------------------------------------------------------


def parse_response(body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """An Anthropic message -> a ChatCompletion. Only `tool_use` blocks become tool calls:
    server-tool blocks ran upstream and a client must not execute them (B.4)."""
    anthropic_message = _load_message(body)
    texts: list[str] = []
    reasoning: list[str] = []
    thinking_blocks: list[dict[str, Any]] = []
    calls: list[ToolCallOut] = []
    for block in anthropic_message["content"]:
        block_type = block.get("type") if isinstance(block, dict) else None
        if block_type == "text":
            texts.append(_string(block, "text"))
        elif block_type == "thinking":
            reasoning.append(_string(block, "thinking"))
            thinking_blocks.append(thinking_block(block))
        elif block_type == "redacted_thinking":
            thinking_blocks.append(thinking_block(block))
        elif block_type == "tool_use":
            calls.append(_tool_call(block))
    usage = anthropic_message.get("usage")
    completion = make_completion(
        ChunkBuilder(ctx.completion_id, ctx.created, ctx.model),
        content="".join(texts),
        tool_calls=calls,
        finish_reason=finish_reason(anthropic_message.get("stop_reason"), bool(calls)),
        usage=openai_usage(usage if isinstance(usage, dict) else {}),
        reasoning="".join(reasoning),
    )
    if thinking_blocks:
        completion["choices"][0]["message"]["thinking_blocks"] = thinking_blocks
    # A ChatCompletion TypedDict is a dict at run time; Translator's signature is the looser one.
    return cast(dict[str, Any], completion)


def thinking_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """A thinking or redacted_thinking block as the client gets it in `thinking_blocks`:
    Anthropic's own fields only, unchanged, so it can go back as it came."""
    if block.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": _string(block, "data")}
    return {
        "type": "thinking",
        "thinking": _string(block, "thinking"),
        "signature": _string(block, "signature"),
    }


def _load_message(body: bytes) -> dict[str, Any]:
    anthropic_message = load_json_object(body, "an answer")
    if not isinstance(anthropic_message.get("content"), list):
        raise UpstreamProtocolError("the anthropic upstream answered without a message content")
    return anthropic_message


def _string(block: Mapping[str, Any], key: str) -> str:
    value = block.get(key)
    return value if isinstance(value, str) else ""


def _tool_call(block: Mapping[str, Any]) -> ToolCallOut:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise UpstreamProtocolError("the anthropic upstream sent a tool_use without id or name")
    tool_input = block.get("input")
    return tool_call(call_id, name, orjson.dumps({} if tool_input is None else tool_input).decode())


def parse_error(status: int, body: bytes, headers: Mapping[str, str]) -> ProxyError:
    """An HTTP error answer, with the upstream's own message (Anthropic's messages name the
    offending field and never echo the key). 5xx become 502 inside UpstreamStatusError."""
    anthropic_error = _error_object(body)
    message = anthropic_error.get("message")
    if not isinstance(message, str) or not message:
        message = f"the anthropic upstream answered HTTP {status}"
    return UpstreamStatusError(
        status, message, type=error_type(anthropic_error), headers=retry_headers(headers)
    )


def _error_object(body: bytes) -> dict[str, Any]:
    """`{"type": "error", "error": {"type", "message"}}`, or {} for anything else (a proxy's
    HTML page, an empty body)."""
    try:
        upstream_body = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    anthropic_error = upstream_body.get("error") if isinstance(upstream_body, dict) else None
    return anthropic_error if isinstance(anthropic_error, dict) else {}
