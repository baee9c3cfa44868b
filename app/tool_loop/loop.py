"""The loop's two drivers, a whole answer and a stream, over the same rounds: dispatch once,
run the MCP calls the model made (or ask for approval), ask again, until the model answers
without calling an MCP tool. The stream's first round is dispatched before the 200 so its
failures keep their status; a later round's failure ends the stream with `response.failed`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from app.errors import ProxyError
from app.faces.responses.framing import failure_code
from app.faces.responses.output import (
    ItemIds,
    call_item,
    finished_response,
    output_items,
    presented,
)
from app.faces.responses.tools import ToolNames
from app.request_record import RequestRecord
from app.routing.dispatch import Answer, answer
from app.spend.cost import COST_HEADER, header_value
from app.state import ProxyState
from app.tool_loop.face import LoopFace, framed
from app.tool_loop.items import Item
from app.tool_loop.offer import OfferedTool
from app.tool_loop.prepare import Prepared
from app.tool_loop.rounds import Call, Rounds, Step, add_usage
from app.tool_loop.run import run_call
from app.tool_loop.writer import LoopWriter

Save = Callable[[dict[str, Any]], Awaitable[None]] | None


@dataclass(slots=True)
class HostedLoop:
    proxy: ProxyState
    record: RequestRecord
    prepared: Prepared
    rounds: Rounds
    shell: dict[str, Any]
    save: Save
    show_encrypted: bool
    mcp_cost: float = 0.0
    """What the MCP calls cost (`cost_per_call`), added to a priced answer's `usage.cost`."""

    @property
    def client_names(self) -> ToolNames:
        return self.prepared.translation.tools

    async def _run(self, offered: OfferedTool, item: Item) -> Item:
        """One call run; a configured server's `cost_per_call` counted when it was called."""
        done, called = await run_call(self.proxy.mcp, offered, item)
        cost = self.proxy.mcp.cost_per_call(offered.server.server) if called else None
        if cost is not None:
            self.record.add_cost(cost)
            self.mcp_cost += cost
        return done

    async def _run_all(self, step: Step) -> list[Item]:
        return [await self._run(offered, item) for _, offered, item in step.run]

    async def _approved(self) -> list[Item]:
        done = [
            await self._run(self.rounds.names.offered[upstream], item)
            for upstream, item in self.prepared.approved
        ]
        self.rounds.add_approved(self.prepared.approved, done)
        return done

    def _counted(self, total: dict[str, Any] | None, usage: Any) -> dict[str, Any] | None:
        """The rounds' usage summed, and kept on the request's record: dispatch records each
        round's alone, and the key's token limits, the metrics and the log line must count
        every round the response cost."""
        total = add_usage(total, usage)
        if total is not None:
            self.record.usage = total
        return total

    async def _settle_so_far(self) -> None:
        """Each round is held to what it cost before the next reserves (budgets)."""
        if self.proxy.spend is not None:
            await self.proxy.spend.settle_so_far(self.record)

    def _with_mcp_cost(self, usage: dict[str, Any] | None) -> dict[str, Any] | None:
        """A priced answer's cost is its rounds' and its MCP calls'; an unpriced answer shows
        none (a part of a cost would look like the whole)."""
        if usage is None or not isinstance(usage.get("cost"), float | int) or not self.mcp_cost:
            return usage
        return {**usage, "cost": usage["cost"] + self.mcp_cost}

    def _client_items(self, calls: list[Call], ids: ItemIds) -> list[Item]:
        return [
            call_item(ids.next("fc"), call_id, name, arguments, self.client_names)
            for call_id, name, arguments in calls
        ]

    # -- a whole answer --------------------------------------------------------------------

    async def whole(self) -> Answer:
        output = [*self.prepared.opening, *await self._approved()]
        usage: dict[str, Any] | None = None
        while True:
            await self._settle_so_far()
            result = await answer(
                self.proxy, self.rounds.chat_request(), self.record, LoopFace(None)
            )
            completion = _completion(result)
            usage = self._counted(usage, completion.get("usage"))
            message = completion["choices"][0]["message"]
            calls = [_call(call) for call in message.get("tool_calls") or ()]
            step = self.rounds.sort(calls)
            if not step.run and not step.approvals:
                output += output_items(completion, self.rounds.ids, self.client_names)
                break
            talk = {**completion["choices"][0], "message": {**message, "tool_calls": None}}
            output += output_items(
                {**completion, "choices": [talk]}, self.rounds.ids, self.client_names
            )
            done = await self._run_all(step)
            output += done + step.approvals + self._client_items(step.client, self.rounds.ids)
            if step.final:
                break
            self.rounds.add_turn(message, step, done)
        finish = completion["choices"][0].get("finish_reason")
        usage = self._with_mcp_cost(usage)
        response = finished_response(self.shell, output, finish, usage)
        if self.save is not None:
            await self.save(response)
        shown = presented(response, show_encrypted=self.show_encrypted)
        headers = dict(result.headers)
        if usage is not None and COST_HEADER in headers:  # the whole response's, not a round's
            headers[COST_HEADER] = header_value(usage["cost"])
        return Answer(result.model_name, completion=shown, headers=headers)

    # -- a stream --------------------------------------------------------------------------

    async def stream(self) -> Answer:
        ids = self.rounds.ids
        writer = LoopWriter(self.shell, ids, self.client_names, show_encrypted=self.show_encrypted)
        writer.opening = [*self.prepared.opening, *await self._approved()]
        face = LoopFace(writer)
        first = await answer(self.proxy, self.rounds.chat_request(), self.record, face)
        return Answer(
            first.model_name, frames=self._frames(first, face, writer), headers=first.headers
        )

    async def _frames(
        self, result: Answer, face: LoopFace, writer: LoopWriter
    ) -> AsyncGenerator[bytes, None]:
        usage: dict[str, Any] | None = None
        while True:
            assert result.frames is not None
            try:
                async for frame in result.frames:
                    yield frame
            finally:
                await result.frames.aclose()
            if face.failed:
                return
            step = self.rounds.sort(writer.held_calls())
            done: list[Item] = []
            for _, offered, item in step.run:
                index, started = writer.call_started(item)
                yield framed(started)  # the client sees the call before its result is back
                done.append(await self._run(offered, item))
                yield framed(writer.call_finished(index, done[-1]))
            approvals = [event for item in step.approvals for event in writer.approval(item)]
            yield framed(approvals + writer.release_calls([call[0] for call in step.client]))
            if not step.final:
                self.rounds.add_turn(face.take_message(), step, done)
            usage = self._counted(usage, writer.new_round())
            if step.final:
                break
            try:
                await self._settle_so_far()
                result = await answer(self.proxy, self.rounds.chat_request(), self.record, face)
            except ProxyError as error:
                yield framed(writer.failed(failure_code(error), self.proxy.redact(error.message)))
                return
        writer.set_usage(self._with_mcp_cost(usage))
        writer.settle()
        if self.save is not None:
            await self.save(writer.final_response())
        yield framed(writer.finish())


def _completion(result: Answer) -> dict[str, Any]:
    completion = result.completion
    raw = getattr(completion, "raw", None)
    if isinstance(raw, bytes):
        loaded: dict[str, Any] = orjson.loads(raw)
        return loaded
    assert completion is not None
    return completion


def _call(call: dict[str, Any]) -> Call:
    function = call.get("function") or {}
    return (call.get("id") or "", function.get("name") or "", function.get("arguments") or "")
