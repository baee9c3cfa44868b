"""The Responses stream writer across the hosted-tool loop's rounds: one writer for the whole
response, so `output_index` and `sequence_number` run on across rounds and there is one
`response.created` and one terminal event. Calls are held until each round ends (the loop
runs the MCP ones and sends the client's whole)."""

from __future__ import annotations

from typing import Any

from app.faces.responses.output import Item, ItemIds
from app.faces.responses.stream import Event, ResponsesStreamWriter
from app.faces.responses.tools import ToolNames


class LoopWriter(ResponsesStreamWriter):
    __slots__ = ("opening",)

    def __init__(
        self, shell: dict[str, Any], ids: ItemIds, names: ToolNames, *, show_encrypted: bool
    ) -> None:
        super().__init__(shell, ids, names, show_encrypted=show_encrypted, hold_calls=True)
        self.opening: list[Item] = []
        """Items that open the output (tool lists, calls approved in this request, already
        run): sent right after `response.in_progress`."""

    def _start(self) -> list[Event]:
        events = super()._start()
        for item in self.opening:
            if item["type"] == "mcp_list_tools":
                events += self.listed(item)
            else:
                index, started = self.call_started(item)
                events += started + self.call_finished(index, item)
        self.opening = []
        return events

    def listed(self, item: Item) -> list[Event]:
        index, added = self.add_item({**item, "tools": []})
        place = {"item_id": item["id"], "output_index": index}
        return [
            added,
            self.event("response.mcp_list_tools.in_progress", **place),
            self.event("response.mcp_list_tools.completed", **place),
            self.done_item(index, item),
        ]

    def call_started(self, item: Item) -> tuple[int, list[Event]]:
        """An `mcp_call` added, its arguments streamed whole: sent before it runs."""
        index, added = self.add_item({**item, "arguments": "", "status": "in_progress"})
        place = {"item_id": item["id"], "output_index": index}
        arguments = item["arguments"]
        return index, [
            added,
            self.event("response.mcp_call.in_progress", **place),
            self.event("response.mcp_call_arguments.delta", **place, delta=arguments),
            self.event("response.mcp_call_arguments.done", **place, arguments=arguments),
        ]

    def call_finished(self, index: int, item: Item) -> list[Event]:
        place = {"item_id": item["id"], "output_index": index}
        outcome = "completed" if item["status"] == "completed" else "failed"
        return [
            self.event(f"response.mcp_call.{outcome}", **place),
            self.done_item(index, item),
        ]

    def approval(self, item: Item) -> list[Event]:
        index, added = self.add_item(item)
        return [added, self.done_item(index, item)]

    def end_round(self) -> list[Event]:
        """A round's chat stream has ended: its live text or reasoning item is closed; its
        calls wait in `held_calls()`."""
        return self.feed([]) + self._close()

    def held_calls(self) -> list[tuple[str, str, str]]:
        """The round's calls in the model's order: (call id, upstream name, arguments)."""
        return [
            (call.call_id, call.name, "".join(call.arguments))
            for _, call in sorted(self._calls.items())
        ]

    def release_calls(self, call_ids: list[str]) -> list[Event]:
        """The given held calls sent to the client whole, as a stream's kept calls are."""
        events: list[Event] = []
        for index, call in sorted(self._calls.items()):
            if call.call_id in call_ids:
                events += self._whole("call", index)
        return events

    def new_round(self) -> Any:
        """Starts the next round; returns the round's usage (the loop sums them)."""
        self._calls = {}
        usage, self._usage = self._usage, None
        return usage

    def set_usage(self, usage: Any) -> None:
        self._usage = usage

    def started(self) -> list[Event]:
        return self.feed([])

    def event(self, kind: str, **fields: Any) -> Event:
        return self._event(kind, **fields)

    def add_item(self, item: Item) -> tuple[int, Event]:
        """An item the loop builds (MCP's): its place and `output_item.added`."""
        index = len(self._output)
        return index, self._event("response.output_item.added", output_index=index, item=item)

    def done_item(self, index: int, item: Item) -> Event:
        self._output.append(item)
        return self._event("response.output_item.done", output_index=index, item=item)
