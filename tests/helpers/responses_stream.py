"""Checks an OpenAI Responses API stream the way Codex and the openai SDK read it: every event
numbered by `sequence_number` 0, 1, 2... with no gap; `response.created` then
`response.in_progress` first; each output item added (`output_index` 0, 1, 2...), filled and
marked done before the next is added (a `response.failed` may cut the last one short), its
deltas adding up to what its `.done` events and its `output_item.done` item carry; the last
event `response.completed`, `.incomplete` or `.failed`, whose response's output is exactly
the items marked done (CONTRACT.md, "OpenAI Responses API"; PROTOCOLS.md G.5)."""

from __future__ import annotations

import json
from typing import Any

from tests.conformance.spec import check_response_event, maybe

LAST = {"response.completed", "response.incomplete", "response.failed"}
ITEM_EVENTS = {
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.delta",
    "response.refusal.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
}


def parse_responses_sse(body: bytes) -> list[dict[str, Any]]:
    """Events from a Responses API SSE body; each frame's `event:` name must match its type,
    and no `[DONE]` comes."""
    events = []
    for frame in body.decode().split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.split("\n"))
        assert fields["data"] != "[DONE]", "a Responses stream has no [DONE]"
        event = json.loads(fields["data"])
        assert fields["event"] == event["type"], frame
        maybe(check_response_event, event)  # OpenAI's own schema (tests/conformance)
        events.append(event)
    return events


def assert_responses_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The last event's response, after checking the invariants above and each event (and
    so each response object it carries) against OpenAI's schema."""
    for event in events:
        maybe(check_response_event, event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert [event["type"] for event in events[:2]] == ["response.created", "response.in_progress"]
    created = events[0]["response"]
    assert created["status"] == "in_progress"
    assert created["output"] == []
    last = events[-1]
    assert last["type"] in LAST, last["type"]
    assert last["response"]["id"] == created["id"]
    assert last["response"]["status"] == last["type"].removeprefix("response.")
    done_items: list[dict[str, Any]] = []
    live: _Item | None = None
    for event in events[2:-1]:
        kind = event["type"]
        assert kind not in {*LAST, "response.created"}, f"{kind} before the end"
        if kind == "response.in_progress":
            continue
        if kind == "response.output_item.added":
            assert live is None, f"item {len(done_items)} added while {live} is open"
            assert event["output_index"] == len(done_items)
            live = _Item(event["item"])
        elif kind == "response.output_item.done":
            assert live is not None, "output_item.done without an item open"
            assert event["output_index"] == len(done_items)
            live.finish(event["item"])
            done_items.append(event["item"])
            live = None
        else:
            assert kind in ITEM_EVENTS, kind
            assert live is not None, f"{kind} without an item open"
            assert event["output_index"] == len(done_items)
            assert event["item_id"] == live.added["id"]
            live.take(event)
    if last["type"] == "response.failed":  # may cut an item short; it is not in the output
        assert last["response"]["output"] == done_items
        assert last["response"]["error"]["code"]
        assert last["response"]["error"]["message"]
    else:
        assert live is None, "the stream ended with an item not marked done"
        assert last["response"]["output"] == done_items
    return dict(last["response"])


class _Item:
    """One output item between its `output_item.added` and `.done`."""

    def __init__(self, added: dict[str, Any]) -> None:
        self.added = added
        self.deltas = ""
        self.parts: list[dict[str, Any]] = []
        self.whole: str | None = None  # from the `.done` event of the item's text or input
        kind = added["type"]
        assert added["id"]
        assert added.get("status") == "in_progress", added
        if kind == "message":
            assert added["content"] == []
            assert added["role"] == "assistant"
        elif kind == "function_call":
            assert added["arguments"] == ""
            assert added["call_id"]
        elif kind == "custom_tool_call":
            assert added["input"] == ""
            assert added["call_id"]
        else:
            assert kind == "reasoning", kind

    def __repr__(self) -> str:
        return f"{self.added['type']} {self.added['id']}"

    def take(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind.endswith(".delta"):
            assert self.whole is None, f"{kind} after its .done"
            if kind == "response.output_text.delta":
                assert self.parts
                assert self.parts[-1]["type"] == "output_text"
                assert event["logprobs"] == []
            self.deltas += event["delta"]
        elif kind == "response.content_part.added":
            assert event["content_index"] == len(self.parts)
            assert event["part"].get("text", "") == ""
            self.parts.append(event["part"])
            self.deltas, self.whole = "", None
        elif kind == "response.content_part.done":
            assert event["content_index"] == len(self.parts) - 1
            assert self.whole is not None
            assert event["part"].get("text") == self.whole
            self.parts[-1] = event["part"]
        else:
            field = {
                "response.function_call_arguments.done": "arguments",
                "response.custom_tool_call_input.done": "input",
                "response.refusal.done": "refusal",
            }.get(kind, "text")
            self.whole = event[field]
            assert self.whole == self.deltas, (kind, self.whole, self.deltas)

    def finish(self, item: dict[str, Any]) -> None:
        identity = ("type", "id", "call_id", "name")
        assert {k: item.get(k) for k in identity} == {k: self.added.get(k) for k in identity}
        assert item["status"] in ("completed", "incomplete"), item
        kind = item["type"]
        if kind == "function_call":
            assert self.whole == item["arguments"]
            json.loads(item["arguments"])
        elif kind == "custom_tool_call":
            assert self.whole == item["input"]
        elif kind == "message":
            assert item["content"] == self.parts
        else:
            assert item["content"] == [part for part in self.parts if part["text"]]
