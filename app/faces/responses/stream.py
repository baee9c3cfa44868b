"""Our chat chunks -> the Responses API's stream events, as an explicit state machine.

A Responses stream is a sequence of output items, each added, filled and marked done before
the next is added (`output_index` 0, 1, 2...), every event numbered by `sequence_number`.
Clients act on `response.output_item.done` alone (Codex builds its history and runs tools
from it), so every item that is added is also done before the response ends.

A chat stream may interleave reasoning, text and parallel calls' fragments, so one item is
live at a time: reasoning and text stream as they come; a call's argument fragments stream as
`function_call_arguments.delta`s. Something new closes the live item, except a call whose
arguments are not yet whole JSON: then the newcomer is kept, in order, and sent as whole items
once the chat stream ends. `response.completed` (or `.incomplete`) carries the same Response
the non-stream call returns, built by the same functions (output.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from app.faces.responses.output import (
    INCOMPLETE,
    Item,
    ItemIds,
    call_item,
    call_item_id,
    custom_input,
    finished_response,
    message_item,
    presented,
    reasoning_item,
    refusal_part,
    text_part,
    without_encrypted,
)
from app.faces.responses.tools import ToolNames
from app.translators.base import Chunk

Event = dict[str, Any]


@dataclass(slots=True)
class _Live:
    """The item being streamed: its kind (`reasoning`, `message` or `call`), place and id."""

    kind: str
    index: int
    item_id: str
    text: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    call: int | None = None  # the chat index of a call


@dataclass(slots=True)
class _Call:
    call_id: str
    name: str
    custom: bool = False
    """A custom tool's: its input is only known whole (a string inside the bridge's JSON),
    so its fragments are not streamed."""
    arguments: list[str] = field(default_factory=list)

    def whole(self) -> bool:
        try:
            orjson.loads("".join(self.arguments))
        except orjson.JSONDecodeError:
            return False
        return True


class ResponsesStreamWriter:
    """feed(chunks) -> events as they can be sent; finish() -> the rest, through
    `response.completed`; failed(code, message) -> the `response.failed` event."""

    __slots__ = (
        "_calls",
        "_finish_reason",
        "_hold",
        "_ids",
        "_kept",
        "_live",
        "_names",
        "_output",
        "_pending",
        "_sequence",
        "_shell",
        "_show_encrypted",
        "_started",
        "_usage",
    )

    def __init__(
        self,
        shell: dict[str, Any],
        ids: ItemIds,
        names: ToolNames,
        *,
        show_encrypted: bool,
        hold_calls: bool = False,
    ) -> None:
        self._shell = shell
        self._hold = hold_calls
        """The hosted-tool loop's rounds: calls are kept, not streamed, until the round ends
        (app/tool_loop decides which are run and which go to the client)."""
        self._show_encrypted = show_encrypted
        self._ids = ids
        self._names = names
        self._started = False
        self._sequence = 0
        self._live: _Live | None = None
        self._output: list[Item] = []
        self._calls: dict[int, _Call] = {}
        self._kept: list[tuple[str, Any]] = []  # after a live unfinished call: (kind, value)
        self._pending: list[Event] = []  # settle()'s events, sent by finish()
        self._finish_reason: Any = None
        self._usage: Any = None

    def feed(self, chunks: list[Chunk]) -> list[Event]:
        events = self._start() if not self._started else []
        for chunk in chunks:
            if chunk.get("usage"):
                self._usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                calls = delta.get("tool_calls")
                if calls and len(delta) == 1 and choice.get("finish_reason") is None:
                    for call_delta in calls:  # most of a stream: a call's argument fragments
                        events += self._call(call_delta)
                else:
                    events += self._delta(delta, choice.get("finish_reason"))
        return events

    def _delta(self, delta: dict[str, Any], finish_reason: Any) -> list[Event]:
        events: list[Event] = []
        if delta.get("reasoning_content"):
            events += self._text("reasoning", delta["reasoning_content"])
        for block in delta.get("thinking_blocks") or ():
            events += self._block(block)
        if delta.get("content"):
            events += self._text("message", delta["content"])
        if delta.get("refusal"):
            events += self._text("refusal", delta["refusal"])
        for call_delta in delta.get("tool_calls") or ():
            events += self._call(call_delta)
        if finish_reason:
            self._finish_reason = finish_reason
        return events

    def settle(self) -> None:
        """The chat stream has ended: closes the live item and adds the kept ones, so that
        final_response() holds every item (it is stored before finish() is sent); their
        events wait for finish()."""
        events = self.feed([]) + self._close()
        for kind, value in self._kept:
            events += self._whole(kind, value)
        self._kept = []
        self._pending += events

    def finish(self) -> list[Event]:
        self.settle()
        events, self._pending = self._pending, []
        response = presented(self.final_response(), show_encrypted=self._show_encrypted)
        kind = "response.completed" if response["status"] == "completed" else "response.incomplete"
        events.append(self._event(kind, response=response))
        return events

    def final_response(self) -> dict[str, Any]:
        """The Response as it stands, as stored (with every item's `encrypted_content`): the
        non-stream answer's shape, from what was streamed."""
        return finished_response(self._shell, self._output, self._finish_reason, self._usage)

    def failed(self, code: str, message: str) -> list[Event]:
        events = self.feed([]) if not self._started else []
        events, self._pending = [*self._pending, *events], []  # numbered: sent before it
        response = presented(self.final_response(), show_encrypted=self._show_encrypted)
        response |= {"status": "failed", "incomplete_details": None}
        response["error"] = {"code": code, "message": message}
        events.append(self._event("response.failed", response=response))
        return events

    def _start(self) -> list[Event]:
        self._started = True
        return [
            self._event("response.created", response=self._shell),
            self._event("response.in_progress", response=self._shell),
        ]

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _text(self, kind: str, text: str) -> list[Event]:
        live = self._live
        if live is not None and live.kind == kind:
            live.text.append(text)
            return [self._text_delta(live, text)]
        if not self._may_close():
            if self._kept and self._kept[-1][0] == kind:
                text = self._kept.pop()[1] + text
            self._kept.append((kind, text))
            return []
        events = self._close() + self._open(kind)
        assert self._live is not None
        self._live.text.append(text)
        return [*events, self._text_delta(self._live, text)]

    def _block(self, block: dict[str, Any]) -> list[Event]:
        """A whole thinking block (Anthropic's, sent once it ended): it belongs to the live
        reasoning item, or to one of its own. The chat delta's `index` is not the block's."""
        block = {name: value for name, value in block.items() if name != "index"}
        if self._live is not None and self._live.kind == "reasoning":
            self._live.blocks.append(block)
            return []
        if not self._may_close():
            self._kept.append(("block", block))
            return []
        events = self._close() + self._open("reasoning")
        assert self._live is not None
        self._live.blocks.append(block)
        return events

    def _call(self, call_delta: dict[str, Any]) -> list[Event]:
        index = call_delta.get("index", 0)
        function = call_delta.get("function") or {}
        fragment = function.get("arguments") or ""
        call = self._calls.get(index)
        if call is not None:
            call.arguments.append(fragment)
            live = self._live
            if fragment and live is not None and live.call == index and not call.custom:
                self._sequence += 1
                return [
                    {
                        "type": "response.function_call_arguments.delta",
                        "sequence_number": self._sequence - 1,
                        "item_id": live.item_id,
                        "output_index": live.index,
                        "delta": fragment,
                    }
                ]
            return []
        name = function.get("name") or ""
        custom = self._names.origin(name).kind == "custom"
        call = self._calls[index] = _Call(call_delta.get("id") or "", name, custom)
        call.arguments.append(fragment)
        if self._hold:
            return []
        if not self._may_close():
            self._kept.append(("call", index))
            return []
        events = self._close() + self._open_call(index, call)
        assert self._live is not None
        if fragment:
            events += self._arguments_delta(self._live, call, fragment)
        return events

    def _may_close(self) -> bool:
        live = self._live
        return live is None or live.call is None or self._calls[live.call].whole()

    def _open(self, kind: str) -> list[Event]:
        if kind == "reasoning":
            item_id = self._ids.next("rs")
            item: Item = {
                "id": item_id,
                "type": "reasoning",
                "summary": [],
                "status": "in_progress",
            }
            part: Item = {"type": "reasoning_text", "text": ""}
        else:
            item_id = self._ids.next("msg")
            item = message_item(item_id, [], "in_progress")
            part = refusal_part("") if kind == "refusal" else text_part("")
        self._live = live = _Live(kind, len(self._output), item_id)
        return [
            self._event("response.output_item.added", output_index=live.index, item=item),
            self._event("response.content_part.added", **self._place(live), part=part),
        ]

    def _open_call(self, index: int, call: _Call) -> list[Event]:
        item_id = call_item_id(self._ids, call.name, self._names)
        self._live = live = _Live("call", len(self._output), item_id, call=index)
        item = call_item(item_id, call.call_id, call.name, "", self._names)
        item["status"] = "in_progress"
        if item["type"] == "custom_tool_call":
            item["input"] = ""
        return [self._event("response.output_item.added", output_index=live.index, item=item)]

    def _close(self) -> list[Event]:
        live = self._live
        if live is None:
            return []
        self._live = None
        if live.call is not None:
            return self._close_call(live, self._calls[live.call])
        text = "".join(live.text)
        place = self._place(live)
        if live.kind == "reasoning":
            item = reasoning_item(live.item_id, text, live.blocks)
            part: Item = {"type": "reasoning_text", "text": text}
            done = self._event("response.reasoning_text.done", **place, text=text)
        elif live.kind == "refusal":
            part = refusal_part(text)
            item = message_item(live.item_id, [part])
            done = self._event("response.refusal.done", **place, refusal=text)
        else:
            finished = INCOMPLETE.get(self._finish_reason) is None
            part = text_part(text)
            item = message_item(live.item_id, [part], "completed" if finished else "incomplete")
            done = self._event("response.output_text.done", **place, text=text, logprobs=[])
        events = [done, self._event("response.content_part.done", **place, part=part)]
        return events + self._item_done(live, item)

    def _close_call(self, live: _Live, call: _Call) -> list[Event]:
        arguments = "".join(call.arguments)
        item = call_item(live.item_id, call.call_id, call.name, arguments, self._names)
        place = {"item_id": live.item_id, "output_index": live.index}
        if item["type"] == "custom_tool_call":
            given = custom_input(arguments)
            events = [
                self._event("response.custom_tool_call_input.delta", **place, delta=given),
                self._event("response.custom_tool_call_input.done", **place, input=given),
            ]
        else:
            done = {"name": item["name"], "arguments": arguments}
            events = [self._event("response.function_call_arguments.done", **place, **done)]
        return events + self._item_done(live, item)

    def _item_done(self, live: _Live, item: Item) -> list[Event]:
        self._output.append(item)
        if not self._show_encrypted and "encrypted_content" in item:
            item = without_encrypted(item)
        return [self._event("response.output_item.done", output_index=live.index, item=item)]

    def _whole(self, kind: str, value: Any) -> list[Event]:
        """A kept item, sent whole once the chat stream has ended."""
        if kind == "call":
            events = self._open_call(value, self._calls[value])
        elif kind == "block":
            events = self._open("reasoning")
            assert self._live is not None
            self._live.blocks.append(value)
        else:
            events = self._open(kind)
            assert self._live is not None
            self._live.text.append(value)
            events.append(self._text_delta(self._live, value))
        if kind == "call" and self._calls[value].arguments:
            assert self._live is not None
            whole = "".join(self._calls[value].arguments)
            events += self._arguments_delta(self._live, self._calls[value], whole)
        return events + self._close()

    def _place(self, live: _Live) -> dict[str, Any]:
        return {"item_id": live.item_id, "output_index": live.index, "content_index": 0}

    def _text_delta(self, live: _Live, text: str) -> Event:
        if live.kind == "reasoning":
            return self._event("response.reasoning_text.delta", **self._place(live), delta=text)
        if live.kind == "refusal":
            return self._event("response.refusal.delta", **self._place(live), delta=text)
        return self._event(
            "response.output_text.delta", **self._place(live), delta=text, logprobs=[]
        )

    def _arguments_delta(self, live: _Live, call: _Call, fragment: str) -> list[Event]:
        if call.custom or not fragment:
            return []
        place = {"item_id": live.item_id, "output_index": live.index}
        return [self._event("response.function_call_arguments.delta", **place, delta=fragment)]
