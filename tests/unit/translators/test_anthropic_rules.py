"""The Anthropic rules helper catches each violation it encodes (so a passing property test
means something), and accepts what Anthropic accepts."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.anthropic_rules import request_problems

TOOLS = [{"name": "f", "input_schema": {"type": "object"}}]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(use_id: str = "toolu_1", tool_input: Any = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": use_id,
        "name": "f",
        "input": {} if tool_input is None else tool_input,
    }


def result(use_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": "ok"}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "at least one message is required"),
        ([user(text("a")), user(text("b"))], "roles must alternate"),
        ([user()], "must have non-empty content"),
        ([user(text(""))], "must be non-empty"),
        ([user(text("  "))], "non-whitespace text"),
        (
            [user(text("a")), assistant(use()), user(text("b"), result())],
            "Did not find 1 tool_result",
        ),
        ([user(text("a")), assistant(use()), user(text("b"))], "without `tool_result` blocks"),
        ([user(text("a")), assistant(use())], "without `tool_result` blocks"),
        ([user(result("toolu_9"))], "unexpected `tool_use_id`"),
        (
            [user(text("a")), assistant(use("fn.x:0")), user(result("fn.x:0"))],
            "should match pattern",
        ),
        ([user(text("a")), assistant(use(tool_input=[])), user(result())], "valid dictionary"),
        ([user(text("a")), assistant(text("b "))], "trailing whitespace"),
    ],
)
def test_each_rule_is_caught(messages: list[dict[str, Any]], fragment: str) -> None:
    problems = request_problems({"messages": messages, "tools": TOOLS})
    assert any(fragment in problem for problem in problems), problems


def test_tool_blocks_need_tools() -> None:
    messages = [user(text("a")), assistant(use()), user(result())]
    assert request_problems({"messages": messages, "tools": TOOLS}) == []
    assert any("must define tools" in p for p in request_problems({"messages": messages}))


@pytest.mark.parametrize(
    "messages",
    [
        [assistant(text("Hello! How can I help?")), user(text("Weather?"))],
        [
            user(text("a")),
            assistant(text("b"), use("toolu_1"), use("toolu_2")),
            user(result("toolu_2"), result("toolu_1"), text("thanks")),
        ],
        [user(text("a")), assistant()],
    ],
)
def test_what_anthropic_accepts_passes(messages: list[dict[str, Any]]) -> None:
    assert request_problems({"messages": messages, "tools": TOOLS}) == []
