"""Anthropic Messages answers -> OpenAI: a message JSON to a ChatCompletion, and the SSE event
stream (PROTOCOLS B.5) to `chat.completion.chunk`s through an explicit state machine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import orjson

from app.errors import UpstreamProtocolError, UpstreamStreamError
from app.openai_types import FinishReason, ToolCallOut, Usage
from app.sse import SSEEvent
from app.translators.base import Chunk, ResponseContext, load_json_object
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
    includes them, with reads as `cached_tokens` (B.10). Counts may be null: read as 0."""
    cache_read = _count(anthropic_usage, "cache_read_input_tokens")
    prompt_tokens = (
        _count(anthropic_usage, "input_tokens")
        + _count(anthropic_usage, "cache_creation_input_tokens")
        + cache_read
    )
    details = anthropic_usage.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return make_usage(
        prompt_tokens,
        _count(anthropic_usage, "output_tokens"),
        cached_tokens=cache_read,
        reasoning_tokens=thinking if isinstance(thinking, int) else None,
    )


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
    calls: list[ToolCallOut] = []
    for block in anthropic_message["content"]:
        block_type = block.get("type") if isinstance(block, dict) else None
        if block_type == "text":
            texts.append(_string(block, "text"))
        elif block_type == "thinking":
            reasoning.append(_string(block, "thinking"))
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
    # A ChatCompletion TypedDict is a dict at run time; Translator's signature is the looser one.
    return cast(dict[str, Any], completion)


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


# --- stream ----------------------------------------------------------------------------------

# Events that only make sense inside a message; the SDK's accumulator raises on them before
# message_start, and so do we (a stream that skipped it is not one we can vouch for).
_IN_MESSAGE = frozenset({"content_block_start", "content_block_delta", "content_block_stop"})


class AnthropicStream:
    """Anthropic SSE events -> OpenAI chunks (B.5).

    State: whether message_start/message_stop were seen; content-block index -> tool_calls
    index (Anthropic's index counts text and thinking blocks too, OpenAI's only calls); the
    start `input` of each call still waiting for its first argument fragment (a parameterless
    call streams only empty fragments and must still end as "{}"); the stop reason and the
    usage merged from message_start and message_delta (whose counts are cumulative).

    The finish chunk goes out at message_stop rather than message_delta: there may be more
    than one message_delta, and the last one's stop reason is the one that holds.
    """

    __slots__ = (
        "_builder",
        "_handlers",
        "_include_usage",
        "_pending_input",
        "_started",
        "_stop_reason",
        "_stopped",
        "_tool_count",
        "_tool_indexes",
        "_usage",
    )

    def __init__(self, ctx: ResponseContext) -> None:
        self._builder = ChunkBuilder(ctx.completion_id, ctx.created, ctx.model)
        self._include_usage = ctx.include_usage
        self._started = False
        self._stopped = False
        self._tool_count = 0
        self._tool_indexes: dict[int, int] = {}
        self._pending_input: dict[int, Any] = {}
        self._stop_reason: Any = None
        self._usage: dict[str, Any] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], list[Chunk]]] = {
            "content_block_delta": self._on_block_delta,
            "content_block_start": self._on_block_start,
            "content_block_stop": self._on_block_stop,
            "message_start": self._on_message_start,
            "message_delta": self._on_message_delta,
            "message_stop": self._on_message_stop,
            "error": _raise_stream_error,
        }

    def feed(self, event: SSEEvent) -> list[Chunk]:
        """Chunks for one event; ping, unknown event types and anything after message_stop
        give none."""
        anthropic_event = load_json_object(event.data, "a stream event")
        event_type = anthropic_event.get("type")
        handler = self._handlers.get(event_type) if isinstance(event_type, str) else None
        if handler is None or self._stopped:
            return []
        if not self._started and event_type in _IN_MESSAGE:
            raise UpstreamProtocolError(f"the anthropic stream sent {event_type} before its start")
        return handler(anthropic_event)

    def finish(self) -> list[Chunk]:
        """The usage chunk, if the client asked for it; a stream cut short is an error."""
        if not self._stopped:
            raise UpstreamProtocolError("the anthropic stream ended before message_stop")
        if not self._include_usage:
            return []
        return [self._builder.usage(openai_usage(self._usage))]

    def _on_message_start(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        if self._started:
            return []
        self._started = True
        anthropic_message = anthropic_event.get("message")
        if isinstance(anthropic_message, dict):
            self._merge_usage(anthropic_message.get("usage"))
        return [self._builder.role()]

    def _on_block_start(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        """A block's start may already carry text (the SDK accumulator keeps it), so it is
        passed on like a delta; a tool_use start is the call's first OpenAI delta."""
        block = anthropic_event.get("content_block")
        if not isinstance(block, dict):
            return []
        block_type = block.get("type")
        if block_type == "tool_use":
            return self._start_tool(anthropic_event.get("index"), block)
        if block_type == "text":
            return self._content(block.get("text"))
        if block_type == "thinking":
            return self._reasoning(block.get("thinking"))
        return []  # redacted_thinking, server tools and their results: nothing a client can use

    def _start_tool(self, block_index: Any, block: dict[str, Any]) -> list[Chunk]:
        call_id, name = block.get("id"), block.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise UpstreamProtocolError("the anthropic stream sent a tool_use without id or name")
        if not isinstance(block_index, int):
            raise UpstreamProtocolError("the anthropic stream sent a tool_use without an index")
        openai_index = self._tool_count
        self._tool_count += 1
        self._tool_indexes[block_index] = openai_index
        self._pending_input[block_index] = block.get("input")
        return [self._builder.tool_call_start(openai_index, call_id, name)]

    def _on_block_delta(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        delta = anthropic_event.get("delta")
        if not isinstance(delta, dict):
            return []
        delta_type = delta.get("type")
        if delta_type == "text_delta":
            return self._content(delta.get("text"))
        if delta_type == "input_json_delta":
            return self._arguments(anthropic_event.get("index"), delta.get("partial_json"))
        if delta_type == "thinking_delta":
            return self._reasoning(delta.get("thinking"))
        return []  # signature_delta, citations_delta, and whatever comes next

    def _content(self, text: Any) -> list[Chunk]:
        return [self._builder.content(text)] if text and isinstance(text, str) else []

    def _reasoning(self, text: Any) -> list[Chunk]:
        return [self._builder.reasoning(text)] if text and isinstance(text, str) else []

    def _arguments(self, block_index: Any, fragment: Any) -> list[Chunk]:
        """One argument fragment, as is. Fragments of blocks we did not start as calls
        (server_tool_use streams its input too; transcript server_tool_use_stream) are dropped."""
        openai_index = self._tool_indexes.get(block_index)
        if openai_index is None or not fragment or not isinstance(fragment, str):
            return []
        self._pending_input.pop(block_index, None)
        return [self._builder.tool_call_arguments(openai_index, fragment)]

    def _on_block_stop(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        block_index = anthropic_event.get("index")
        if block_index not in self._pending_input:
            return []
        return [self._unstreamed_arguments(block_index)]

    def _unstreamed_arguments(self, block_index: int) -> Chunk:
        """A call that streamed no fragment: its arguments are its start `input` ("{}" for a
        parameterless call), never "" (strict clients json.loads them; F.4). Transcript:
        parameterless_tool_call_stream."""
        tool_input = self._pending_input.pop(block_index)
        arguments = orjson.dumps({} if tool_input is None else tool_input).decode()
        return self._builder.tool_call_arguments(self._tool_indexes[block_index], arguments)

    def _on_message_delta(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        delta = anthropic_event.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason") is not None:
            self._stop_reason = delta["stop_reason"]
        self._merge_usage(anthropic_event.get("usage"))
        return []

    def _on_message_stop(self, anthropic_event: dict[str, Any]) -> list[Chunk]:
        if not self._started:
            raise UpstreamProtocolError("the anthropic stream sent message_stop before its start")
        self._stopped = True
        # A call whose block never closed still owes its arguments before the finish chunk.
        chunks = [self._unstreamed_arguments(index) for index in list(self._pending_input)]
        reason = finish_reason(self._stop_reason, self._tool_count > 0)
        chunks.append(self._builder.finish(reason))
        return chunks

    def _merge_usage(self, anthropic_usage: Any) -> None:
        """Later non-null counts override earlier ones (message_delta's are cumulative)."""
        if isinstance(anthropic_usage, dict):
            for key, value in anthropic_usage.items():
                if value is not None:
                    self._usage[key] = value


def _raise_stream_error(anthropic_event: dict[str, Any]) -> list[Chunk]:
    """An `error` event (e.g. overloaded_error after HTTP 200): the relay sends it in-band."""
    anthropic_error = anthropic_event.get("error")
    if not isinstance(anthropic_error, dict):
        anthropic_error = {}
    message = anthropic_error.get("message")
    if not isinstance(message, str) or not message:
        message = "the anthropic upstream reported an error during the stream"
    raise UpstreamStreamError(message, type=error_type(anthropic_error) or "api_error")
