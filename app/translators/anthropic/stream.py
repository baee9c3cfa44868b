"""Anthropic Messages SSE events (PROTOCOLS B.5) -> `chat.completion.chunk`s through an explicit
state machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from app.errors import UpstreamProtocolError, UpstreamStreamError
from app.sse import SSEEvent
from app.translators.anthropic.response import (
    error_type,
    finish_reason,
    openai_usage,
    thinking_block,
)
from app.translators.base import Chunk, ResponseContext, load_json_object
from app.translators.chunks import ChunkBuilder

# Events that only make sense inside a message; the SDK's accumulator raises on them before
# message_start, and so do we (a stream that skipped it is not one we can vouch for).
_IN_MESSAGE = frozenset({"content_block_start", "content_block_delta", "content_block_stop"})


class AnthropicStream:
    """Anthropic SSE events -> OpenAI chunks (B.5).

    State: whether message_start/message_stop were seen; the thinking blocks still open
    (their text and signature, sent whole as one `thinking_blocks` delta at their stop, so a
    client can send them back); content-block index -> tool_calls index (Anthropic's index
    counts text and thinking blocks too, OpenAI's only calls); the
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
        "_thinking",
        "_thinking_count",
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
        self._thinking: dict[Any, _OpenThinking] = {}
        self._thinking_count = 0
        self._stop_reason: Any = None
        self._usage: dict[str, Any] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], list[Chunk]]] = {
            "content_block_delta": self._on_block_delta,
            "content_block_start": self._on_block_start,
            "content_block_stop": self._on_block_stop,
            "message_start": self._on_message_start,
            "message_delta": self._on_message_delta,
            "message_stop": self._on_message_stop,
            "error": raise_stream_error,
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

    def usage(self) -> dict[str, Any] | None:
        return dict(openai_usage(self._usage)) if self._usage else None

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
        if block_type in ("thinking", "redacted_thinking"):
            self._thinking[anthropic_event.get("index")] = _OpenThinking(block)
            return self._reasoning(block.get("thinking"))
        return []  # server tools and their results: nothing a client can use

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
            text = delta.get("thinking")
            self._thinking_part(anthropic_event.get("index"), "thinking", text)
            return self._reasoning(text)
        if delta_type == "signature_delta":
            self._thinking_part(anthropic_event.get("index"), "signature", delta.get("signature"))
        return []  # citations_delta, and whatever comes next

    def _thinking_part(self, block_index: Any, field: str, fragment: Any) -> None:
        block = self._thinking.get(block_index)
        if block is not None and fragment and isinstance(fragment, str):
            block.parts[field].append(fragment)

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
        thinking = self._thinking.pop(block_index, None)
        if thinking is not None:
            return [self._thinking_block(thinking)]
        if block_index not in self._pending_input:
            return []
        return [self._unstreamed_arguments(block_index)]

    def _thinking_block(self, thinking: _OpenThinking) -> Chunk:
        position = self._thinking_count
        self._thinking_count += 1
        return self._builder.thinking_block(position, thinking.block())

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
        # Blocks that never closed still owe what they hold before the finish chunk.
        chunks = [self._thinking_block(block) for block in self._thinking.values()]
        self._thinking.clear()
        chunks += [self._unstreamed_arguments(index) for index in list(self._pending_input)]
        reason = finish_reason(self._stop_reason, self._tool_count > 0)
        chunks.append(self._builder.finish(reason))
        return chunks

    def _merge_usage(self, anthropic_usage: Any) -> None:
        merge_usage(self._usage, anthropic_usage)


def merge_usage(usage: dict[str, Any], anthropic_usage: Any) -> None:
    """Later non-null counts override earlier ones (message_delta's are cumulative)."""
    if isinstance(anthropic_usage, dict):
        for key, value in anthropic_usage.items():
            if value is not None:
                usage[key] = value


class _OpenThinking:
    """A thinking block being streamed: its start's fields and the fragments since, joined
    once at its stop. A redacted_thinking block comes whole in its start."""

    __slots__ = ("parts", "start")

    def __init__(self, start: dict[str, Any]) -> None:
        self.start = start
        self.parts: dict[str, list[str]] = {"thinking": [], "signature": []}

    def block(self) -> dict[str, Any]:
        start = {field: value for field, value in self.start.items() if isinstance(value, str)}
        for field, fragments in self.parts.items():
            if fragments:
                start[field] = start.get(field, "") + "".join(fragments)
        return thinking_block(start)


def raise_stream_error(anthropic_event: dict[str, Any]) -> list[Chunk]:
    """An `error` event (e.g. overloaded_error after HTTP 200): the relay sends it in-band."""
    anthropic_error = anthropic_event.get("error")
    if not isinstance(anthropic_error, dict):
        anthropic_error = {}
    message = anthropic_error.get("message")
    if not isinstance(message, str) or not message:
        message = "the anthropic upstream reported an error during the stream"
    raise UpstreamStreamError(message, type=error_type(anthropic_error) or "api_error")
