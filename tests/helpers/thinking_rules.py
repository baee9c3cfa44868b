"""What Anthropic's Messages API refuses about extended thinking (PROTOCOLS B.7), as a pure
check with Anthropic's own error texts: the budget's bounds, the sampling fields thinking
rules out, a forced tool_choice, a tool loop whose opening assistant message does not start
with its thinking, and thinking blocks whose text or signature is not what was issued (the
signature covers the text, so an edited or invented block is refused). With thinking off, an
assistant message in the final position may not carry thinking."""

from __future__ import annotations

from typing import Any

SMALLEST_BUDGET = 1024
DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
BUDGET_TOO_SMALL = "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
BUDGET_OVER_MAX = (
    "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
    f"documentation at {DOCS}#max-tokens-and-context-window-size"
)
TEMPERATURE = (
    "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
    f"documentation at {DOCS}#important-considerations-when-using-extended-thinking"
)
TOP_K = "`top_k` must be unset when thinking is enabled."
TOP_P = "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled."
FORCED_TOOL = "Thinking may not be enabled when tool_choice forces tool use."
MUST_START_WITH_THINKING = (
    "messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    f"disable `thinking`. Please consult our documentation at {DOCS}"
)
BAD_SIGNATURE = "messages.{n}.content.{i}: Invalid `signature` in `thinking` block"
BAD_REDACTED = "messages.{n}.content.{i}: Invalid `data` in `redacted_thinking` block"
EXTRA_KEY = "messages.{n}.content.{i}.{type}.{key}: Extra inputs are not permitted"
THINKING_WHEN_OFF = (
    "messages.{n}.content.{i}.type: When thinking is disabled, an `assistant` message in the "
    "final position cannot contain `{type}`. To use thinking blocks, enable `thinking` in your "
    "request."
)
BLOCK_KEYS = {"thinking": {"type", "thinking", "signature"}, "redacted_thinking": {"type", "data"}}


def thinking_problems(body: dict[str, Any], issued: dict[str, str]) -> list[str]:
    """Every reason Anthropic would refuse this body over thinking; [] if it would take it.
    `issued` maps each signature (or redacted `data`) handed out to the thinking text it
    signs ("" for redacted blocks)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    problems = block_problems(messages, issued)
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return problems + final_position_problems(messages)
    return problems + setting_problems(body, thinking) + opening_problems(messages)


def setting_problems(body: dict[str, Any], thinking: dict[str, Any]) -> list[str]:
    problems = []
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < SMALLEST_BUDGET:
        problems.append(BUDGET_TOO_SMALL)
    elif budget >= body.get("max_tokens", 0):
        problems.append(BUDGET_OVER_MAX)
    if body.get("temperature", 1) != 1:
        problems.append(TEMPERATURE)
    if "top_k" in body:
        problems.append(TOP_K)
    if not 0.95 <= body.get("top_p", 1) <= 1:
        problems.append(TOP_P)
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        problems.append(FORCED_TOOL)
    return problems


def opening_problems(messages: list[dict[str, Any]]) -> list[str]:
    """A conversation that ends in a tool loop continues one assistant turn: the assistant
    message that opened the loop must come back starting with its thinking."""
    opening = loop_opening(messages)
    if opening is None:
        return []
    content = messages[opening].get("content")
    first = content[0] if isinstance(content, list) and content else {"type": "text"}
    if first.get("type") in BLOCK_KEYS:
        return []
    return [MUST_START_WITH_THINKING.format(n=opening, found=first.get("type"))]


def loop_opening(messages: list[dict[str, Any]]) -> int | None:
    """The position of the first assistant message after the last user message that is not
    only tool results, when the conversation ends in tool results; else None."""
    if not messages or not _only_results(messages[-1]):
        return None
    opening = None
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.get("role") == "assistant":
            opening = position
        elif not _only_results(message):
            break
    return opening


def block_problems(messages: list[dict[str, Any]], issued: dict[str, str]) -> list[str]:
    problems = []
    for n, message in enumerate(messages):
        content = message.get("content")
        for i, block in enumerate(content if isinstance(content, list) else []):
            kind = block.get("type")
            if kind not in BLOCK_KEYS:
                continue
            problems += [
                EXTRA_KEY.format(n=n, i=i, type=kind, key=key)
                for key in sorted(set(block) - BLOCK_KEYS[kind])
            ]
            if kind == "thinking" and issued.get(block.get("signature", "")) != block.get(
                "thinking"
            ):
                problems.append(BAD_SIGNATURE.format(n=n, i=i))
            if kind == "redacted_thinking" and issued.get(block.get("data", "")) != "":
                problems.append(BAD_REDACTED.format(n=n, i=i))
    return problems


def final_position_problems(messages: list[dict[str, Any]]) -> list[str]:
    if not messages or messages[-1].get("role") != "assistant":
        return []
    content = messages[-1].get("content")
    return [
        THINKING_WHEN_OFF.format(n=len(messages) - 1, i=i, type=block.get("type"))
        for i, block in enumerate(content if isinstance(content, list) else [])
        if block.get("type") in BLOCK_KEYS
    ]


def _only_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(block.get("type") == "tool_result" for block in content)
    )
