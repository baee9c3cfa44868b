"""Converse stream events -> `chat.completion.chunk`s (PROTOCOLS H.1), fed as the eventstream
decoder (eventstream.py) produces them: `SSEEvent(data=<JSON payload>, event=<event type>)`,
exception frames as `event="exception:<type>"`.

The event sequence: messageStart; per content block, contentBlockStart (tool calls only: text
and reasoning blocks have none), contentBlockDelta*, contentBlockStop; messageStop with the
stop reason; metadata with the usage. A call's input arrives as string fragments, the first
possibly empty, possibly none at all (then its arguments are `{}`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import UpstreamProtocolError
from app.sse import SSEEvent
from app.translators.base import Chunk, ResponseContext, load_json_object
from app.translators.bedrock.errors import stream_error
from app.translators.bedrock.names import tool_names
from app.translators.bedrock.response import (
    call_limit,
    finish_reason,
    openai_usage,
    reasoning_block,
)
from app.translators.chunks import ChunkBuilder
from app.translators.gemini.response import DROPPED_CALLS_HEADER

_FAILURES = ("exception:", "error:")


class BedrockStream:
    """Converse events -> OpenAI chunks.

    State: whether a chunk was made (the role chunk goes with the first one); content-block
    index -> tool-call
    index (Converse counts text and reasoning blocks too, OpenAI only calls); the calls that
    have streamed no fragment yet (they end as `{}`); the reasoning blocks being streamed,
    sent whole as `thinking_blocks` at their stop; whether messageStop came; the metadata's
    usage.
    """

    __slots__ = (
        "_builder",
        "_ctx",
        "_dropped",
        "_handlers",
        "_include_usage",
        "_limit",
        "_names",
        "_no_fragment",
        "_reasoning",
        "_started",
        "_stopped",
        "_thinking_count",
        "_tool_indexes",
        "_usage",
    )

    def __init__(self, ctx: ResponseContext) -> None:
        self._ctx = ctx
        self._builder = ChunkBuilder(ctx.completion_id, ctx.created, ctx.model)
        self._include_usage = ctx.include_usage
        self._names = tool_names(ctx.request)
        self._limit = call_limit(ctx.request)
        self._dropped = 0
        self._started = False
        self._stopped = False
        self._tool_indexes: dict[Any, int] = {}
        self._no_fragment: set[Any] = set()
        self._reasoning: dict[Any, dict[str, Any]] = {}
        self._thinking_count = 0
        self._usage: Any = None
        self._handlers: dict[str, Callable[[dict[str, Any]], list[Chunk]]] = {
            "contentBlockDelta": self._on_delta,
            "contentBlockStart": self._on_start,
            "contentBlockStop": self._on_stop,
            "messageStop": self._on_message_stop,
            "metadata": self._on_metadata,
        }

    def feed(self, event: SSEEvent) -> list[Chunk]:
        """Chunks for one event; messageStart and unknown events give none, and after
        messageStop only the metadata counts."""
        event_type = event.event or ""
        if event_type.startswith(_FAILURES):
            raise stream_error(event_type, event.data)
        handler = self._handlers.get(event_type)
        if handler is None or (self._stopped and event_type != "metadata"):
            return []
        return self._send(handler(load_json_object(event.data, "a stream event")))

    def finish(self) -> list[Chunk]:
        """The usage chunk, if the client asked; a stream without messageStop, or without the
        metadata Bedrock always sends after it, was cut short."""
        if not self._stopped:
            raise UpstreamProtocolError("the bedrock stream ended before messageStop")
        if self._usage is None:
            raise UpstreamProtocolError("the bedrock stream ended before its metadata")
        if not self._include_usage:
            return []
        return [self._builder.usage(openai_usage(self._usage))]

    def usage(self) -> dict[str, Any] | None:
        return None if self._usage is None else dict(openai_usage(self._usage))

    def _send(self, chunks: list[Chunk]) -> list[Chunk]:
        """The role chunk first, once: the OpenAI Node SDK's stream helper needs it."""
        if chunks and not self._started:
            self._started = True
            chunks.insert(0, self._builder.role())
        return chunks

    def _on_start(self, bedrock_event: dict[str, Any]) -> list[Chunk]:
        start = bedrock_event.get("start")
        tool_use = start.get("toolUse") if isinstance(start, dict) else None
        if not isinstance(tool_use, dict):
            return []
        call_id, name = tool_use.get("toolUseId"), tool_use.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise UpstreamProtocolError("the bedrock stream sent a toolUse without id or name")
        index = len(self._tool_indexes)
        if self._limit is not None and index >= self._limit:
            self._dropped += 1
            self._ctx.headers[DROPPED_CALLS_HEADER] = str(self._dropped)
            return []
        block_index = bedrock_event.get("contentBlockIndex")
        self._tool_indexes[block_index] = index
        self._no_fragment.add(block_index)
        return [self._builder.tool_call_start(index, call_id, self._names.client(name))]

    def _on_delta(self, bedrock_event: dict[str, Any]) -> list[Chunk]:
        delta = bedrock_event.get("delta")
        if not isinstance(delta, dict):
            return []
        block_index = bedrock_event.get("contentBlockIndex")
        text = delta.get("text")
        if isinstance(text, str):
            return [self._builder.content(text)] if text else []
        tool_use = delta.get("toolUse")
        if isinstance(tool_use, dict):
            return self._arguments(block_index, tool_use.get("input"))
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            return self._reasoning_delta(block_index, reasoning)
        return []  # citations, and whatever comes next

    def _arguments(self, block_index: Any, fragment: Any) -> list[Chunk]:
        """A fragment, exactly as it came; an empty one (often the first) gives nothing.
        Fragments of a dropped call find no index and go nowhere."""
        index = self._tool_indexes.get(block_index)
        if index is None or not fragment or not isinstance(fragment, str):
            return []
        self._no_fragment.discard(block_index)
        return [self._builder.tool_call_arguments(index, fragment)]

    def _reasoning_delta(self, block_index: Any, reasoning: dict[str, Any]) -> list[Chunk]:
        """Reasoning text goes out as it comes; the signature or redacted content only with
        the whole block at its stop."""
        block = self._reasoning.setdefault(block_index, {"text": [], "signature": []})
        text = reasoning.get("text")
        if isinstance(reasoning.get("signature"), str):
            block["signature"].append(reasoning["signature"])
        if isinstance(reasoning.get("redactedContent"), str):
            block["redacted"] = reasoning["redactedContent"]
        if isinstance(text, str) and text:
            block["text"].append(text)
            return [self._builder.reasoning(text)]
        return []

    def _on_stop(self, bedrock_event: dict[str, Any]) -> list[Chunk]:
        return self._close_block(bedrock_event.get("contentBlockIndex"))

    def _close_block(self, block_index: Any) -> list[Chunk]:
        reasoning = self._reasoning.pop(block_index, None)
        if reasoning is not None:
            return self._thinking_block(reasoning)
        if block_index in self._no_fragment:
            self._no_fragment.discard(block_index)
            return [self._builder.tool_call_arguments(self._tool_indexes[block_index], "{}")]
        return []

    def _thinking_block(self, reasoning: dict[str, Any]) -> list[Chunk]:
        if "redacted" in reasoning:
            shaped = reasoning_block({"redactedContent": reasoning["redacted"]})
        else:
            text = {
                "text": "".join(reasoning["text"]),
                "signature": "".join(reasoning["signature"]),
            }
            shaped = reasoning_block({"reasoningText": text})
        if shaped is None:
            return []
        position = self._thinking_count
        self._thinking_count += 1
        return [self._builder.thinking_block(position, shaped)]

    def _on_message_stop(self, bedrock_event: dict[str, Any]) -> list[Chunk]:
        """Blocks that never closed still owe what they hold before the one finish chunk."""
        reason = finish_reason(bedrock_event.get("stopReason"), bool(self._tool_indexes))
        chunks: list[Chunk] = []
        unstreamed = sorted(self._no_fragment, key=self._tool_indexes.__getitem__)
        for block_index in [*self._reasoning, *unstreamed]:
            chunks += self._close_block(block_index)
        self._stopped = True
        chunks.append(self._builder.finish(reason))
        return chunks

    def _on_metadata(self, bedrock_event: dict[str, Any]) -> list[Chunk]:
        self._usage = bedrock_event.get("usage") or {}
        return []
