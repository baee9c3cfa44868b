"""What Bedrock refuses in a Converse / ConverseStream body, for the Bedrock double
(tests/helpers/mock_bedrock.py), each a ValidationException message:

- the input shape, by botocore's own validator (`ParamValidator`) against botocore's
  `bedrock-runtime` service model: types, required members, unions, lengths and ranges;
- the patterns that validator leaves unchecked (tool names `[a-zA-Z0-9_-]+`, toolUseIds),
  worded as Bedrock's coral layer words them (1-based indexes, `.member.`);
- the conversation rules no shape can express (PROTOCOLS.md H.1 traps), in Bedrock's words
  where peers' trackers quote them: tool blocks without a toolConfig (LiteLLM #24158), a
  toolUse not answered in the very next user message (LiteLLM #5277, Bifrost #1164), blank
  text (LiteLLM #7169), the first message not a user's, roles not alternating; and, in our
  words, a toolUse input or toolResult json that is not an object, more than 4 cache points.

The first problem found is the answer, as Bedrock answers one message."""

from __future__ import annotations

import re
from typing import Any

from botocore.validate import ParamValidator

from tests.unit.translators.bedrock.shapes import input_shape, shape

TOOL_CONFIG_REQUIRED = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)
FIRST_USER = (
    "A conversation must start with a user message. Try again with a conversation that "
    "starts with a user message."
)
ALTERNATE = (
    "A conversation must alternate between user and assistant roles. Make sure the "
    "conversation alternates between user and assistant roles and try again."
)
MAX_CACHE_POINTS = 4


def request_problem(model_id: str, body: Any, *, stream: bool) -> str | None:
    """The message of Bedrock's ValidationException for this body, None when it would run."""
    if not isinstance(body, dict):
        return "Malformed input request, please reformat your input and try again."
    operation = "ConverseStream" if stream else "Converse"
    report = ParamValidator().validate({**body, "modelId": model_id}, input_shape(operation))
    if report.has_errors():
        return str(report.generate_report())
    checks = (
        _pattern_problem,
        _blank_text_problem,
        _document_problem,
        _cache_point_problem,
        _tool_config_problem,
        _turns_problem,
        _claude_fields_problem,
    )
    for check in checks:
        problem = check(body)
        if problem is not None:
            return problem
    return None


def _constraint(value: str, where: str, rule: str) -> str:
    return (
        f"1 validation error detected: Value '{value}' at '{where}' failed to satisfy "
        f"constraint: {rule}"
    )


def _named(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(shape, value, Bedrock's location) of every tool name and toolUseId in the body."""
    found = [
        ("ToolName", tool["toolSpec"]["name"], f"toolConfig.tools.{i}.member.toolSpec.name")
        for i, tool in enumerate(body.get("toolConfig", {}).get("tools", []), 1)
        if "toolSpec" in tool
    ]
    for m, message in enumerate(body["messages"], 1):
        for b, block in enumerate(message["content"], 1):
            where = f"messages.{m}.member.content.{b}.member"
            for kind in ("toolUse", "toolResult"):
                if kind in block:
                    found.append(
                        ("ToolUseId", block[kind]["toolUseId"], f"{where}.{kind}.toolUseId")
                    )
            if "toolUse" in block:
                found.append(("ToolName", block["toolUse"]["name"], f"{where}.toolUse.name"))
    return found


def _pattern_problem(body: dict[str, Any]) -> str | None:
    for shape_name, value, where in _named(body):
        metadata = shape(shape_name).metadata
        pattern = metadata["pattern"]
        if not re.fullmatch(pattern, value):
            return _constraint(
                value, where, f"Member must satisfy regular expression pattern: {pattern}"
            )
        if len(value) > metadata.get("max", 64):
            return _constraint(value, where, "Member must have length less than or equal to 64")
    return None


def _blank_text_problem(body: dict[str, Any]) -> str | None:
    for s, block in enumerate(body.get("system", [])):
        if "text" in block and not block["text"].strip():
            return (
                f"The text field in the SystemContentBlock object at system.{s} is blank. "
                "Add text to the text field, and try again."
            )
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "text" in block and not block["text"].strip():
                return (
                    f"The text field in the ContentBlock object at messages.{m}.content.{b} "
                    "is blank. Add text to the text field, and try again."
                )
    return None


def _document_problem(body: dict[str, Any]) -> str | None:
    """A toolUse's `input` and a toolResult's `json` are documents to botocore, but Bedrock
    (its models) takes only JSON objects there: `{}` for no arguments, an array sent as text.
    The wording is ours; Bedrock's is not quoted anywhere we could check."""
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            where = f"messages.{m}.content.{b}"
            if "toolUse" in block and not isinstance(block["toolUse"]["input"], dict):
                return f"The toolUse input at {where} must be a JSON object."
            results = block.get("toolResult", {}).get("content", [])
            if any("json" in part and not isinstance(part["json"], dict) for part in results):
                return f"The toolResult json at {where} must be a JSON object."
    return None


def _cache_point_problem(body: dict[str, Any]) -> str | None:
    """At most 4 cache points in a request (system, messages and tools together)."""
    blocks = [*body.get("system", []), *body.get("toolConfig", {}).get("tools", [])]
    blocks += [block for message in body["messages"] for block in message["content"]]
    count = sum("cachePoint" in block for block in blocks)
    if count > MAX_CACHE_POINTS:
        return f"A maximum of {MAX_CACHE_POINTS} cachePoint blocks are allowed, found {count}."
    return None


def _tool_config_problem(body: dict[str, Any]) -> str | None:
    if body.get("toolConfig"):
        return None
    for message in body["messages"]:
        if any("toolUse" in block or "toolResult" in block for block in message["content"]):
            return TOOL_CONFIG_REQUIRED
    return None


def _ids(message: dict[str, Any], kind: str) -> list[str]:
    return [block[kind]["toolUseId"] for block in message["content"] if kind in block]


def _turns_problem(body: dict[str, Any]) -> str | None:
    """Roles start with the user and alternate; each assistant turn's toolUses are answered,
    all of them, by the toolResults of the next message, and results answer only those."""
    messages: list[dict[str, Any]] = body["messages"]
    if messages and messages[0]["role"] != "user":
        return FIRST_USER
    previous_uses: list[str] = []
    for m, message in enumerate(messages):
        if m and message["role"] == messages[m - 1]["role"]:
            return ALTERNATE
        results = _ids(message, "toolResult")
        if len(results) > len(previous_uses):
            return (
                f"The number of toolResult blocks at messages.{m}.content exceeds the number "
                "of toolUse blocks of previous turn."
            )
        missing = [call_id for call_id in previous_uses if call_id not in results]
        if missing:
            return (
                f"Expected toolResult blocks at messages.{m}.content for the following Ids: "
                + ", ".join(missing)
            )
        previous_uses = _ids(message, "toolUse")
    return None


CLAUDE_BETAS = frozenset(
    {
        "computer-use-2024-10-22",
        "computer-use-2025-01-24",
        "computer-use-2025-11-24",
        "context-1m-2025-08-07",
        "context-management-2025-06-27",
        "dev-full-thinking-2025-05-14",
        "effort-2025-11-24",
        "interleaved-thinking-2025-05-14",
        "output-128k-2025-02-19",
        "token-efficient-tools-2025-02-19",
        "tool-examples-2025-10-29",
        "tool-search-tool-2025-10-19",
    }
)
"""The `anthropic_beta` values of Bedrock's Claude request parameters (AWS's Anthropic Claude
Messages API page); any other is refused."""


def _claude_fields_problem(body: dict[str, Any]) -> str | None:
    """Claude's own fields in `additionalModelRequestFields`: betas Bedrock takes, and a
    thinking budget of at least 1024 below maxTokens."""
    fields = body.get("additionalModelRequestFields") or {}
    betas = fields.get("anthropic_beta", [])
    if not isinstance(betas, list) or not set(betas) <= CLAUDE_BETAS:
        return "invalid beta flag"
    thinking = fields.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        limit = (body.get("inferenceConfig") or {}).get("maxTokens")
        if not isinstance(budget, int) or budget < 1024 or (limit is not None and limit <= budget):
            return "thinking.budget_tokens: must be >= 1024 and less than max_tokens"
    return None
