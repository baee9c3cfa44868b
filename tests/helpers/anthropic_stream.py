"""Checks an Anthropic Messages stream the way Claude Code and the Anthropic SDK read it: the
event order (message_start first; each block started, filled and stopped before the next, with
indexes 0, 1, 2...; message_delta then message_stop last), every tool_use's input_json_delta
fragments adding up to a JSON object, and the SDK's own accumulator rebuilding the message."""

from __future__ import annotations

import json
from typing import Any

from anthropic.lib.streaming._messages import accumulate_event


def parse_anthropic_sse(body: bytes) -> list[dict[str, Any]]:
    """Events from a Messages API SSE body; each frame's `event:` name must match its type."""
    events = []
    for frame in body.decode().split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.split("\n"))
        event = json.loads(fields["data"])
        assert fields["event"] == event["type"], frame
        events.append(event)
    return events


def assert_anthropic_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The message the stream rebuilds to (as the SDK's accumulator does), after checking the
    invariants above. Pings may come anywhere after message_start."""
    events = [event for event in events if event["type"] != "ping"]
    assert events[0]["type"] == "message_start"
    assert [event["type"] for event in events[-2:]] == ["message_delta", "message_stop"]
    open_index: int | None = None
    next_index = 0
    fragments: dict[int, str] = {}
    for event in events[1:-2]:
        kind = event["type"]
        if kind == "content_block_start":
            assert open_index is None, f"block {next_index} started while {open_index} is open"
            assert event["index"] == next_index
            open_index = next_index
            if event["content_block"]["type"] == "tool_use":
                assert event["content_block"]["input"] == {}
                fragments[open_index] = ""
        elif kind == "content_block_delta":
            assert event["index"] == open_index
            if event["delta"]["type"] == "input_json_delta":
                fragments[event["index"]] += event["delta"]["partial_json"]
        else:
            assert kind == "content_block_stop", kind
            assert event["index"] == open_index
            open_index, next_index = None, next_index + 1
    assert open_index is None
    for index, joined in fragments.items():
        assert isinstance(json.loads(joined or "{}"), dict), (index, joined)
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)  # type: ignore[arg-type]
    assert snapshot is not None
    rebuilt: dict[str, Any] = snapshot.to_dict(exclude_none=True)
    return rebuilt
