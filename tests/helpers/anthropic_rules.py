"""What Anthropic's Messages API refuses in a request's history, as a pure check: each rule is
one PROTOCOLS B.3 / B.9 quotes from a real Anthropic 400 (roles that do not alternate, empty
content or text blocks, tool_use blocks not answered at the start of the next user turn,
results for calls the previous turn did not make, ids off the pattern, non-object inputs,
trailing whitespace in a final prefill, tool blocks with no tools declared). A leading
assistant turn is accepted: Anthropic's API has taken one since 2024."""

from __future__ import annotations

import re
from typing import Any

TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
ALTERNATE = (
    'messages: roles must alternate between "user" and "assistant", but found multiple '
    '"{role}" roles in a row'
)
EMPTY_CONTENT = (
    "messages.{n}: all messages must have non-empty content except for the optional final "
    "assistant message"
)
EMPTY_TEXT = "messages.{n}: text content blocks must be non-empty"
BLANK_TEXT = "messages.{n}: text content blocks must contain non-whitespace text"
RESULTS_FIRST = (
    "messages.{n}: Did not find {count} tool_result block(s) at the beginning of this message. "
    "Messages following tool_use blocks must begin with a matching number of tool_result blocks."
)
UNANSWERED = (
    "messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
UNEXPECTED_RESULT = (
    "messages.{n}.content.{i}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
BAD_ID = "messages.{n}.content.{i}.{field}: String should match pattern '^[a-zA-Z0-9_-]+$'"
BAD_INPUT = "messages.{n}.content.{i}.tool_use.input: Input should be a valid dictionary"
TRAILING_WHITESPACE = "messages: final assistant content cannot end with trailing whitespace"
NO_TOOLS = "Requests which include `tool_use` or `tool_result` blocks must define tools."
NO_MESSAGES = "messages: at least one message is required"


def request_problems(body: dict[str, Any]) -> list[str]:
    """Every reason Anthropic would refuse this body's history; [] if it would take it."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [NO_MESSAGES]
    problems = system_problems(body.get("system"))
    previous: dict[str, Any] | None = None
    uses_tools = False
    for n, message in enumerate(messages):
        role = message.get("role")
        if previous is not None and previous.get("role") == role:
            problems.append(ALTERNATE.format(role=role))
        content = message.get("content")
        last = n == len(messages) - 1
        if not content and not (last and role == "assistant"):
            problems.append(EMPTY_CONTENT.format(n=n))
        blocks = content if isinstance(content, list) else []
        problems += block_problems(blocks, n)
        problems += pairing_problems(previous, blocks, n)
        uses_tools = uses_tools or any(b.get("type") in ("tool_use", "tool_result") for b in blocks)
        previous = message
    if previous is not None and previous.get("role") == "assistant":
        problems += prefill_problems(previous.get("content") or [])
    if previous is not None and _uses(previous):
        problems.append(UNANSWERED.format(n=len(messages) - 1, ids=", ".join(_uses(previous))))
    if uses_tools and not body.get("tools"):
        problems.append(NO_TOOLS)
    return problems


def system_problems(system: Any) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    return [
        "system: text content blocks must be non-empty"
        for block in system
        if block.get("type") == "text" and not block.get("text", "").strip()
    ]


def block_problems(blocks: list[dict[str, Any]], n: int) -> list[str]:
    problems = []
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            if block.get("text") == "":
                problems.append(EMPTY_TEXT.format(n=n))
            elif not block.get("text", "").strip():
                problems.append(BLANK_TEXT.format(n=n))
        elif kind == "tool_use":
            if not TOOL_ID.fullmatch(str(block.get("id"))):
                problems.append(BAD_ID.format(n=n, i=i, field="tool_use.id"))
            if not isinstance(block.get("input"), dict):
                problems.append(BAD_INPUT.format(n=n, i=i))
        elif kind == "tool_result" and not TOOL_ID.fullmatch(str(block.get("tool_use_id"))):
            problems.append(BAD_ID.format(n=n, i=i, field="tool_result.tool_use_id"))
    return problems


def pairing_problems(
    previous: dict[str, Any] | None, blocks: list[dict[str, Any]], n: int
) -> list[str]:
    """The turn after tool_use blocks opens with one tool_result per use; results answer only
    the previous turn's uses."""
    uses = _uses(previous) if previous is not None else []
    leading = 0
    while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
        leading += 1
    answered = {block.get("tool_use_id") for block in blocks[:leading]}
    problems = []
    if uses and leading < len(uses):
        problems.append(RESULTS_FIRST.format(n=n, count=len(uses)))
    missing = [use for use in uses if use not in answered]
    if uses and missing:
        problems.append(UNANSWERED.format(n=n - 1, ids=", ".join(missing)))
    for i, block in enumerate(blocks):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in uses:
            problems.append(UNEXPECTED_RESULT.format(n=n, i=i, id=block.get("tool_use_id")))
    return problems


def prefill_problems(content: Any) -> list[str]:
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    last = blocks[-1] if blocks else None
    if (
        last
        and last.get("type") == "text"
        and last.get("text", "") != last.get("text", "").rstrip()
    ):
        return [TRAILING_WHITESPACE]
    return []


def _uses(message: dict[str, Any]) -> list[str]:
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [str(b.get("id")) for b in message["content"] if b.get("type") == "tool_use"]
