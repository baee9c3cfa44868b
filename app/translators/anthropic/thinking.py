"""Extended thinking for OpenAI clients (PROTOCOLS B.7): `reasoning_effort` -> `thinking`, and
the rules that come with it.

Thinking is turned off for one request, with a warning instead of an error, in two cases where
Anthropic would refuse the request and the client could not have known: `tool_choice` forces a
call ("Thinking may not be enabled when tool_choice forces tool use"; the forced call is the
harder requirement, reasoning only a preference), and a tool loop whose first assistant
message came back without its thinking blocks, which neither the client nor the proxy's store
still has (Anthropic's documented way out: disable thinking for that request). Sampling fields
that thinking rules out are refused by name, as they were asked for explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import InvalidRequest
from app.openai_types import AssistantMessage, ChatRequest, Message, ToolMessage
from app.translators.base import Target
from app.translators.reasoning import requested_effort, thinking_budget

SMALLEST_BUDGET = 1024  # "thinking.budget_tokens: Input should be greater than or equal to 1024"
TOP_P_RANGE = (0.95, 1.0)  # the only top_p values Anthropic takes with thinking on

TOOL_CHOICE_WARNING = (
    "thinking is off for this request: Anthropic does not allow thinking when tool_choice "
    "forces a tool call"
)
MISSING_BLOCKS_WARNING = (
    "thinking is off for this request: the assistant message at messages[{n}] came back "
    "without its thinking_blocks and the proxy no longer holds them; Anthropic needs them "
    "to continue a tool loop with thinking on"
)


@dataclass(frozen=True, slots=True)
class Thinking:
    """What one request asks of Anthropic: a budget (None: thinking off), and the warning
    that explains why thinking is off when the client asked for it."""

    budget: int | None = None
    warning: str | None = None


OFF = Thinking()


def plan_thinking(request: ChatRequest, target: Target) -> Thinking:
    effort = requested_effort(request, "anthropic")
    if effort is None or effort == "none":
        return OFF
    choice = request.tool_choice
    if request.tools and choice is not None and choice not in ("auto", "none"):
        return Thinking(warning=TOOL_CHOICE_WARNING)
    missing = unreplayable_message(request.messages)
    if missing is not None:
        return Thinking(warning=MISSING_BLOCKS_WARNING.format(n=missing))
    _check_sampling(request)
    return Thinking(budget=thinking_budget(effort, target.reasoning, SMALLEST_BUDGET))


def unreplayable_message(messages: list[Message]) -> int | None:
    """The position of the assistant message that opens the tool loop the conversation ends
    in, when it has tool calls and no thinking blocks; None when there is no such loop or its
    blocks are there. Anthropic: "a final `assistant` message must start with a thinking
    block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)"."""
    if not messages or not isinstance(messages[-1], ToolMessage):
        return None
    opening: int | None = None
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, AssistantMessage):
            opening = position
        elif not isinstance(message, ToolMessage):
            break
    if opening is None:
        return None
    message = messages[opening]
    assert isinstance(message, AssistantMessage)
    return None if message.thinking_blocks or not message.tool_calls else opening


def replay_blocks(blocks: list[Any], param: str) -> list[dict[str, Any]]:
    """A client's `thinking_blocks` as Anthropic blocks, text and signature as they came. Only
    Anthropic's own keys are kept: our stream deltas add `index` (the OpenAI SDK's stream
    accumulator needs one to keep blocks apart), which Anthropic would refuse."""
    replayed: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        where = f"{param}[{position}]"
        block_type = block.get("type") if isinstance(block, dict) else None
        if block_type == "thinking":
            thinking, signature = block.get("thinking"), block.get("signature")
            if not isinstance(thinking, str) or not isinstance(signature, str):
                raise InvalidRequest(
                    "a thinking block needs 'thinking' and 'signature' strings", param=where
                )
            replayed.append({"type": "thinking", "thinking": thinking, "signature": signature})
        elif block_type == "redacted_thinking":
            data = block.get("data")
            if not isinstance(data, str):
                raise InvalidRequest("a redacted_thinking block needs a 'data' string", param=where)
            replayed.append({"type": "redacted_thinking", "data": data})
        else:
            raise InvalidRequest(
                "thinking_blocks entries must have type 'thinking' or 'redacted_thinking'",
                param=where,
            )
    return replayed


def _check_sampling(request: ChatRequest) -> None:
    top_k = (request.model_extra or {}).get("top_k")
    if request.temperature is not None and request.temperature != 1:
        _refuse("temperature", "must be 1 or unset")
    if top_k is not None:
        _refuse("top_k", "must be unset")
    low, high = TOP_P_RANGE
    if request.top_p is not None and not low <= request.top_p <= high:
        _refuse("top_p", f"must be between {low} and {high} or unset")


def _refuse(field: str, rule: str) -> None:
    raise InvalidRequest(
        f"'{field}' {rule} with reasoning_effort on anthropic upstreams (extended thinking "
        "allows nothing else)",
        param=field,
    )
