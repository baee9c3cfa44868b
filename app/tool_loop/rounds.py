"""What one round of the loop decides, the same for a stream and a whole answer: which of the
model's calls are MCP calls to run, which ask for approval first, which go to the client,
and what the next round's chat request holds (the model's turn and the results)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from app.faces.responses.mcp_history import chat_call_id, item_id, told_model
from app.faces.responses.output import ItemIds
from app.openai_types import ChatRequest, chat_request_from_wire
from app.tool_loop.items import Item, approval_item, call_item
from app.tool_loop.offer import McpNames, OfferedTool
from app.tool_loop.prepare import Prepared

Call = tuple[str, str, str]  # (call id, upstream name, arguments)
NOT_RUN = "Not run: this response's max_tool_calls was reached."


@dataclass(slots=True)
class Step:
    """A round's calls sorted: MCP calls to run now (each with its added item), approval
    requests, the client's calls, and MCP calls past `max_tool_calls`."""

    run: list[tuple[Call, OfferedTool, Item]] = field(default_factory=list)
    approvals: list[Item] = field(default_factory=list)
    client: list[Call] = field(default_factory=list)
    skipped: list[Call] = field(default_factory=list)

    @property
    def final(self) -> bool:
        """The response ends with this round: nothing was run, or something waits on the
        client (its own calls, or an approval)."""
        return not self.run or bool(self.approvals or self.client)


class Rounds:
    """The chat request of each round and the bookkeeping between rounds."""

    __slots__ = (
        "_calls",
        "_max_calls",
        "_max_rounds",
        "_offered",
        "_prepared",
        "ids",
        "number",
    )

    def __init__(self, prepared: Prepared, body: dict[str, Any], ids: ItemIds, max_rounds: int):
        self._prepared = prepared
        self.ids = ids
        self._max_rounds = max_rounds
        cap = body.get("max_tool_calls")
        self._max_calls = cap if isinstance(cap, int) and not isinstance(cap, bool) else None
        self._calls = 0
        self._offered = True  # whether the round being answered offered the MCP tools
        self.number = 0

    @property
    def names(self) -> McpNames:
        return self._prepared.names

    @property
    def withdrawn(self) -> bool:
        """The MCP tools are withdrawn once `max_rounds` model calls or `max_tool_calls`
        MCP calls were made: the model is asked once more without them."""
        spent = self._max_calls is not None and self._calls >= self._max_calls
        return self.number >= self._max_rounds or spent

    def chat_request(self) -> ChatRequest:
        wire = dict(self._prepared.translation.wire)
        self._offered = not self.withdrawn
        offered = self._prepared.functions if self._offered else []
        tools = [*wire.get("tools", ()), *offered]
        choice = self._prepared.first_choice if self.number == 0 else None
        if isinstance(choice, dict) and "mcp_any" in choice:
            tools = [tool for tool in offered if tool["function"]["name"] in choice["mcp_any"]]
            choice = "required"
        if tools:
            wire["tools"] = tools
        if choice is not None and tools:
            wire["tool_choice"] = choice
        elif wire.get("tool_choice") not in (None, "none", "auto") and self.number:
            wire["tool_choice"] = "auto"  # a forced call is forced once
        self.number += 1
        return chat_request_from_wire(wire)

    def sort(self, calls: list[Call]) -> Step:
        step = Step()
        for call in calls:
            # In the round asked without MCP tools, a call to one anyway is the client's.
            offered = self.names.get(call[1]) if self._offered else None
            if offered is None:
                step.client.append(call)
            elif self._max_calls is not None and self._calls >= self._max_calls:
                step.skipped.append(call)
            elif offered.server.needs_approval(offered.tool.name, offered.tool.annotations):
                step.approvals.append(
                    approval_item(
                        item_id(self.ids.next("mcpr"), call[0]),
                        offered.server.label,
                        offered.tool.name,
                        call[2],
                    )
                )
            else:
                self._calls += 1
                item = call_item(
                    item_id(self.ids.next("mcp"), call[0]),
                    offered.server.label,
                    offered.tool.name,
                    call[2],
                )
                step.run.append((call, offered, item))
        return step

    def add_turn(self, message: dict[str, Any], step: Step, done: list[Item]) -> None:
        """The model's turn (its text, thinking and the calls run) and each result, for the
        next round."""
        calls = [
            {"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}
            for call, _, _ in step.run
        ] + [
            {"id": c[0], "type": "function", "function": {"name": c[1], "arguments": c[2]}}
            for c in step.skipped
        ]
        turn: dict[str, Any] = {"role": "assistant", "content": message.get("content") or None}
        if message.get("thinking_blocks"):
            turn["thinking_blocks"] = copy.deepcopy(message["thinking_blocks"])
        turn["tool_calls"] = calls
        results = [
            {"role": "tool", "tool_call_id": call[0], "content": told_model(item)}
            for (call, _, _), item in zip(step.run, done, strict=True)
        ] + [{"role": "tool", "tool_call_id": c[0], "content": NOT_RUN} for c in step.skipped]
        self.append([turn, *results])

    def add_approved(self, approved: list[tuple[str, Item]], done: list[Item]) -> None:
        """Calls approved in this request, run before the first round: each as a call and
        its result after the conversation."""
        messages: list[dict[str, Any]] = []
        for (upstream, item), result in zip(approved, done, strict=True):
            function = {"name": upstream, "arguments": item["arguments"]}
            call_id = chat_call_id(item["id"])
            call = {"id": call_id, "type": "function", "function": function}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": told_model(result)}
            )
        self.append(messages)

    def append(self, messages: list[dict[str, Any]]) -> None:
        wire = self._prepared.translation.wire
        wire["messages"] = [*wire["messages"], *messages]


def add_usage(total: dict[str, Any] | None, usage: Any) -> dict[str, Any] | None:
    """Usage summed over rounds (the details and `cost` too)."""
    if not isinstance(usage, dict):
        return total
    if total is None:
        return copy.deepcopy(usage)
    summed = dict(total)
    for name, value in usage.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            summed[name] = (summed.get(name) or 0) + value
        elif isinstance(value, dict):
            summed[name] = add_usage(summed.get(name) or {}, value)
    return summed
