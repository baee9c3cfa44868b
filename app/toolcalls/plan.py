"""What tool-call quality work one request needs, decided once before the upstream call: the
tools it offered (name -> parameters schema), whether text-written calls are recovered, and
whether calls must be held until they are validated (on_invalid `error`, `retry` or
`fallback`), and what the deployment-quality tracker judges against.

A request that offered no tools gets no plan, so it pays nothing on its hot path."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from app.config import OnInvalid, ToolCallsConfig
from app.openai_types import ChatRequest


@dataclass(frozen=True, slots=True)
class ToolPlan:
    tools: dict[str, Any]
    """Offered tool name -> its `parameters` JSON Schema (None when the tool declares none)."""
    recover: str | None
    """The scanner's mode, or None when recovery is off for the model. With `tool_choice:
    "none"` it is "off": no call may fire, but inline `<think>` is still split off."""
    on_invalid: OnInvalid
    retries: int
    min_valid_rate: float | None = None
    window: int = 50

    @property
    def holds_calls(self) -> bool:
        """Calls are kept from the client until validated, so a bad one can still be refused
        or asked for again."""
        return self.on_invalid != "pass"

    @property
    def refuses_once_committed(self) -> bool:
        """Whether a bad call is still refused once a stream has reached the client (with its
        one error event): `error` refuses it, and `retry`, which cannot ask again then, ends
        as when its retries ran out. `fallback` cannot ask another deployment either, so the
        answer goes on as `pass` would relay it (CONTRACT.md, routing by tool-call quality)."""
        return self.on_invalid in ("error", "retry")

    def passing(self) -> ToolPlan:
        """The same plan relaying calls as they come: for the last candidate of on_invalid
        `fallback`, whose answer goes out whatever its calls are."""
        return replace(self, on_invalid="pass")


def plan_for(request: ChatRequest, settings: ToolCallsConfig) -> ToolPlan | None:
    if not request.tools:
        return None
    tools = {tool.function.name: tool.function.parameters for tool in request.tools}
    recover: str | None = settings.recover
    if recover == "off":
        recover = None
    elif request.tool_choice == "none":
        recover = "off"
    return ToolPlan(
        tools,
        recover,
        settings.on_invalid,
        settings.retries,
        settings.min_valid_rate,
        settings.window,
    )
