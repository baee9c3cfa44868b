"""Our chat chunks -> Anthropic's stream events, as an explicit state machine.

Anthropic's stream has blocks with indexes 0, 1, 2..., each started, filled and stopped before
the next starts; a chat stream may interleave reasoning, text and parallel calls' fragments.
So one block is live at a time: reasoning and text stream as they come until the first tool
call opens; that call's argument fragments stream as `input_json_delta`s; anything after it
(more calls, late text) is kept, in order, and sent as whole blocks once the chat stream ends
(a client acts on tool calls only after `message_stop` anyway). `message_delta` carries the
stop reason (`tool_use` whenever a tool was called) and the usage, then `message_stop`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.faces.messages.response import anthropic_usage, message_shell, stop_reason
from app.translators.base import Chunk

Event = dict[str, Any]

# A text-like block: its type, and its delta's type and field.
TEXT_BLOCKS = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking")}
DELTA_KEYS = (("reasoning_content", "thinking"), ("content", "text"))


@dataclass(slots=True)
class _Call:
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class MessagesStreamWriter:
    """feed(chunks) -> events as they can be sent; finish() -> the rest, through message_stop."""

    __slots__ = (
        "_calls",
        "_finish_reason",
        "_kept",
        "_live_call",
        "_message_id",
        "_model",
        "_next_index",
        "_open",
        "_started",
        "_usage",
    )

    def __init__(self, message_id: str, model: str) -> None:
        self._message_id = message_id
        self._model = model
        self._started = False
        self._next_index = 0  # the index of the open block, or of the next one
        self._open: str | None = None  # "text" | "thinking" | "tool_use" while a block is open
        self._live_call: int | None = None  # the chat index of the call streamed live
        self._calls: dict[int, _Call] = {}
        self._kept: list[tuple[str, Any]] = []  # after the live call: (kind, text | call index)
        self._finish_reason: Any = None
        self._usage: Any = None

    def feed(self, chunks: list[Chunk]) -> list[Event]:
        events: list[Event] = []
        if not self._started:
            self._started = True
            message = message_shell(self._message_id, self._model)
            events.append({"type": "message_start", "message": message})
        for chunk in chunks:
            if chunk.get("usage"):
                self._usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                for key, kind in DELTA_KEYS:
                    if delta.get(key):
                        events += self._text(kind, delta[key])
                for call_delta in delta.get("tool_calls") or ():
                    events += self._call(call_delta)
                if choice.get("finish_reason"):
                    self._finish_reason = choice["finish_reason"]
        return events

    def finish(self) -> list[Event]:
        events = self.feed([]) if not self._started else []
        events += self._close()
        for kind, item in self._kept:
            events += self._whole_block(kind, item)
        reason = stop_reason(self._finish_reason, called_tools=bool(self._calls))
        delta = {"stop_reason": reason, "stop_sequence": None}
        usage = anthropic_usage(self._usage)
        events.append({"type": "message_delta", "delta": delta, "usage": usage})
        events.append({"type": "message_stop"})
        return events

    def _text(self, kind: str, text: str) -> list[Event]:
        if self._live_call is not None:
            if self._kept and self._kept[-1][0] == kind:
                text = self._kept.pop()[1] + text
            self._kept.append((kind, text))
            return []
        events: list[Event] = []
        if self._open != kind:
            events += self._close()
            events.append(self._start(kind, _text_block(kind)))
        events.append(self._delta(_text_delta(kind, text)))
        return events

    def _call(self, call_delta: dict[str, Any]) -> list[Event]:
        index = call_delta.get("index", 0)
        function = call_delta.get("function") or {}
        call = self._calls.get(index)
        events: list[Event] = []
        if call is None:
            call_id = call_delta.get("id") or f"toolu_{self._message_id}_{index}"
            call = self._calls[index] = _Call(call_id, function.get("name") or "")
            if self._live_call is None:
                events += self._close()
                events.append(self._start("tool_use", _tool_block(call)))
                self._live_call = index
            else:
                self._kept.append(("call", index))
        fragment = function.get("arguments")
        if fragment and index == self._live_call and self._open == "tool_use":
            events.append(self._delta({"type": "input_json_delta", "partial_json": fragment}))
        elif fragment:
            call.arguments.append(fragment)
        return events

    def _whole_block(self, kind: str, item: Any) -> list[Event]:
        """A kept call or text as one whole block: start, one delta, stop."""
        if kind == "call":
            call = self._calls[item]
            events = [self._start("tool_use", _tool_block(call))]
            if call.arguments:
                partial = "".join(call.arguments)
                events.append(self._delta({"type": "input_json_delta", "partial_json": partial}))
        else:
            events = [self._start(kind, _text_block(kind)), self._delta(_text_delta(kind, item))]
        return events + self._close()

    def _start(self, kind: str, block: dict[str, Any]) -> Event:
        self._open = kind
        return {"type": "content_block_start", "index": self._next_index, "content_block": block}

    def _delta(self, delta: dict[str, Any]) -> Event:
        return {"type": "content_block_delta", "index": self._next_index, "delta": delta}

    def _close(self) -> list[Event]:
        """Stops the open block, if any; the next one gets the next index."""
        if self._open is None:
            return []
        self._open = None
        self._next_index += 1
        return [{"type": "content_block_stop", "index": self._next_index - 1}]


def _text_block(kind: str) -> dict[str, Any]:
    return (
        {"type": "thinking", "thinking": "", "signature": ""}
        if kind == "thinking"
        else {"type": "text", "text": ""}
    )


def _text_delta(kind: str, text: str) -> dict[str, Any]:
    delta_type, field_name = TEXT_BLOCKS[kind]
    return {"type": delta_type, field_name: text}


def _tool_block(call: _Call) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}
