"""`reasoning_effort` for the translated kinds: the values they take, and the thinking budget
each one stands for (CONTRACT.md, "Reasoning")."""

from __future__ import annotations

from typing import Literal, cast

from app.config import Effort, ReasoningConfig
from app.errors import InvalidRequest
from app.openai_types import ChatRequest

Requested = Effort | Literal["none"]
EFFORTS: tuple[Requested, ...] = ("none", "minimal", "low", "medium", "high")


def requested_effort(request: ChatRequest, kind: str) -> Requested | None:
    """The client's `reasoning_effort`, None when unset. OpenAI also knows `xhigh` (some
    models): no translated upstream has a level above high, so it is refused by name rather
    than quietly lowered."""
    value = (request.model_extra or {}).get("reasoning_effort")
    if value is None:
        return None
    if value not in EFFORTS:
        raise InvalidRequest(
            f"'reasoning_effort' must be one of {', '.join(EFFORTS)} for {kind} upstreams",
            param="reasoning_effort",
        )
    return cast(Requested, value)


def thinking_budget(effort: Effort, reasoning: ReasoningConfig, smallest: int) -> int:
    """The model's budget for `effort`, never below the upstream's smallest (which is also
    what `minimal` means when no budget is configured for it)."""
    configured = getattr(reasoning.budgets, effort)
    return smallest if configured is None else max(configured, smallest)
