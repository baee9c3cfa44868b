"""Converse answers -> OpenAI chat completions (PROTOCOLS H.1), with the stop-reason, usage and
call-limit rules the stream shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import orjson

from app.errors import UpstreamProtocolError
from app.openai_types import ChatRequest, FinishReason, ToolCallOut, Usage
from app.translators.anthropic.response import thinking_block
from app.translators.base import ResponseContext, load_json_object
from app.translators.bedrock.names import ToolNames, tool_names
from app.translators.chunks import ChunkBuilder, make_completion, make_usage, tool_call
from app.translators.gemini.response import DROPPED_CALLS_HEADER
from app.translators.openai.fields import final_finish_reason

# Converse `stopReason` -> OpenAI `finish_reason` (CONTRACT, "Cloud kinds"); an unknown or
# missing one is "stop".
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
# The model broke its own output: nothing a client could use came back.
MALFORMED = frozenset({"malformed_model_output", "malformed_tool_use"})


def finish_reason(stop_reason: Any, has_tool_calls: bool) -> FinishReason:
    """Calls passed on -> `tool_calls` whatever Bedrock says (agent loops branch on it);
    `tool_use` with every call dropped (tool_choice none) -> `stop`. A malformed output is the
    upstream failing: an error, never an answer."""
    if stop_reason in MALFORMED:
        raise UpstreamProtocolError(f"the bedrock upstream stopped with {stop_reason}")
    reason = STOP_REASONS.get(stop_reason, "stop") if isinstance(stop_reason, str) else "stop"
    return cast(FinishReason, final_finish_reason(reason, has_tool_calls))


def openai_usage(bedrock_usage: Any) -> Usage:
    """`inputTokens` excludes cache reads and writes; OpenAI's `prompt_tokens` includes both,
    with the reads as `cached_tokens` and the writes, when reported, as `cache_write_tokens`
    (as the anthropic kind reports them)."""
    counts = bedrock_usage if isinstance(bedrock_usage, dict) else {}
    cache_read = _count(counts, "cacheReadInputTokens")
    cache_write = _count(counts, "cacheWriteInputTokens")
    prompt = _count(counts, "inputTokens") + cache_read + cache_write
    return make_usage(
        prompt,
        _count(counts, "outputTokens"),
        cached_tokens=cache_read,
        cache_write_tokens=cache_write
        if isinstance(counts.get("cacheWriteInputTokens"), int)
        else None,
    )


def _count(counts: Mapping[str, Any], key: str) -> int:
    value = counts.get(key)
    return value if isinstance(value, int) else 0


def call_limit(request: ChatRequest) -> int | None:
    """How many of the model's calls reach the client: none under tool_choice `none` (the
    tools may have been sent only so Converse accepts the history), one with
    `parallel_tool_calls: false` (Converse has no such switch), else all."""
    if request.tool_choice == "none":
        return 0
    if request.parallel_tool_calls is False:
        return 1
    return None


def reasoning_block(reasoning: Mapping[str, Any]) -> dict[str, Any] | None:
    """A `reasoningContent` block as the client gets it in `thinking_blocks`: the anthropic
    kind's shape, so a client replays both kinds' blocks the same way (messages.py turns it
    back)."""
    text = reasoning.get("reasoningText")
    if isinstance(text, dict):
        return thinking_block(
            {"type": "thinking", "thinking": text.get("text"), "signature": text.get("signature")}
        )
    redacted = reasoning.get("redactedContent")
    if isinstance(redacted, str):
        return thinking_block({"type": "redacted_thinking", "data": redacted})
    return None


def parse_response(body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """A ConverseResponse -> a ChatCompletion."""
    answer = load_json_object(body, "an answer")
    output = answer.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        raise UpstreamProtocolError("the bedrock upstream answered without a message content")
    texts: list[str] = []
    reasoning: list[str] = []
    blocks: list[dict[str, Any]] = []
    calls: list[ToolCallOut] = []
    names = tool_names(ctx.request)
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), dict):
            calls.append(_tool_call(block["toolUse"], names))
        elif isinstance(block.get("reasoningContent"), dict):
            thinking = reasoning_block(block["reasoningContent"])
            if thinking is not None:
                blocks.append(thinking)
                reasoning.append(thinking.get("thinking", ""))
    calls = _limit_calls(calls, ctx)
    completion = make_completion(
        ChunkBuilder(ctx.completion_id, ctx.created, ctx.model),
        content="".join(texts),
        tool_calls=calls,
        finish_reason=finish_reason(answer.get("stopReason"), bool(calls)),
        usage=openai_usage(answer.get("usage")),
        reasoning="".join(reasoning),
    )
    if blocks:
        completion["choices"][0]["message"]["thinking_blocks"] = blocks
    return cast(dict[str, Any], completion)


def _tool_call(tool_use: Mapping[str, Any], names: ToolNames) -> ToolCallOut:
    call_id, name = tool_use.get("toolUseId"), tool_use.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise UpstreamProtocolError("the bedrock upstream sent a toolUse without id or name")
    tool_input = tool_use.get("input")
    arguments = orjson.dumps({} if tool_input is None else tool_input).decode()
    return tool_call(call_id, names.client(name), arguments)


def _limit_calls(calls: list[ToolCallOut], ctx: ResponseContext) -> list[ToolCallOut]:
    limit = call_limit(ctx.request)
    if limit is None or len(calls) <= limit:
        return calls
    ctx.headers[DROPPED_CALLS_HEADER] = str(len(calls) - limit)
    return calls[:limit]
