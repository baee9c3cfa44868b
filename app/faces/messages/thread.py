"""Anthropic's server-held conversations (`thread`) for kinds that have none, the pure part:
a `create` keeps the conversation (its system, tools, messages and the answer) under the
answer's id; a `continue` puts that conversation before the request's new messages, its system
and tools applying when the request leaves them out (the anthropic SDK's tool runner sends
only the new tool results). The caller keeps the records in the response store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.errors import InvalidRequest

Event = dict[str, Any]
KEPT = ("system", "tools")


class ThreadNotFound(InvalidRequest):
    code = "thread_not_found"


@dataclass(frozen=True, slots=True)
class Thread:
    """What a request asked of its thread: to keep the conversation, and the id it goes on
    from (None on `create`)."""

    previous_id: str | None


def thread_of(body: dict[str, Any]) -> Thread | None:
    thread = body.get("thread")
    if thread is None:
        return None
    kind = thread.get("type") if isinstance(thread, dict) else None
    if kind == "create":
        return Thread(None)
    previous = thread.get("previous_message_id") if isinstance(thread, dict) else None
    if kind == "continue" and isinstance(previous, str) and previous:
        return Thread(previous)
    raise InvalidRequest(
        "thread: expected {'type': 'create'} or {'type': 'continue', 'previous_message_id'}",
        param="thread",
    )


def not_found(previous_id: str) -> ThreadNotFound:
    return ThreadNotFound(
        f"thread.previous_message_id: no thread found for message '{previous_id}'",
        param="thread.previous_message_id",
    )


def continued(body: dict[str, Any], record: dict[str, Any] | None) -> dict[str, Any]:
    """The request as a whole conversation, without `thread` (a translated kind has none)."""
    whole = {name: value for name, value in body.items() if name != "thread"}
    if record is None:
        return whole
    for name in KEPT:
        if whole.get(name) is None and record.get(name) is not None:
            whole[name] = record[name]
    messages = body.get("messages")
    whole["messages"] = [*record["messages"], *(messages if isinstance(messages, list) else [])]
    return whole


def kept(whole: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """The record a `create` or `continue` keeps under the answer's id."""
    record = {name: whole.get(name) for name in KEPT}
    answer = {"role": "assistant", "content": message.get("content") or []}
    record["messages"] = [*whole.get("messages", []), answer]
    return record


def _input(arguments: str) -> Any:
    """A call's input as its `partial_json` makes it; arguments that are not JSON (relayed so
    under `on_invalid: pass`) kept as the string they came as, and sent up so next turn."""
    try:
        return orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return arguments


class MessageFold:
    """A stream's events folded into the message they make (as the SDK's accumulator does),
    so a streamed answer can be kept like a whole one."""

    __slots__ = ("_inputs", "content")

    def __init__(self) -> None:
        self.content: list[dict[str, Any]] = []
        self._inputs: dict[int, list[str]] = {}

    def feed(self, events: list[Event]) -> None:
        for event in events:
            kind = event.get("type")
            if kind == "content_block_start":
                self.content.append(dict(event["content_block"]))
            elif kind == "content_block_delta":
                self._delta(event["index"], event["delta"])
            elif kind == "content_block_stop" and event["index"] in self._inputs:
                arguments = "".join(self._inputs[event["index"]])
                self.content[event["index"]]["input"] = _input(arguments)

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.content[index]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] += delta["text"]
        elif kind == "thinking_delta":
            block["thinking"] += delta["thinking"]
        elif kind == "input_json_delta":
            self._inputs.setdefault(index, []).append(delta["partial_json"])
