"""reasoning_effort -> Anthropic extended thinking (PROTOCOLS B.7): the budget per effort and
per model, max_tokens kept above it, the sampling fields thinking rules out refused by name,
thinking turned off (with a warning) where Anthropic would refuse the request, and thinking
blocks replayed first, exactly as they came."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ReasoningBudgets, ReasoningConfig
from app.translators.anthropic.thinking import MISSING_BLOCKS_WARNING, TOOL_CHOICE_WARNING
from app.translators.base import Target
from tests.helpers.anthropic_requests import (
    HELLO,
    PROVIDER,
    TARGET,
    TOOLS,
    assistant_calls,
    body,
    call,
    refusal,
    send,
)

THINKING = {"type": "thinking", "thinking": "Think: ünïcode \u2028 kept.", "signature": "c2ln+/="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgB"}


def loop(*, blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A tool loop in progress: the user asked, the assistant called, the result is back."""
    assistant = assistant_calls(call("toolu_1"))
    if blocks is not None:
        assistant["thinking_blocks"] = blocks
    return [HELLO, assistant, {"role": "tool", "tool_call_id": "toolu_1", "content": "18C"}]


@pytest.mark.parametrize(
    ("effort", "budget"), [("minimal", 1024), ("low", 1024), ("medium", 4096), ("high", 16384)]
)
def test_each_effort_asks_for_its_default_budget(effort: str, budget: int) -> None:
    sent = body(reasoning_effort=effort, max_tokens=32000)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert sent["max_tokens"] == 32000


def test_budgets_come_from_the_model_config_and_never_go_below_anthropics_floor() -> None:
    reasoning = ReasoningConfig(budgets=ReasoningBudgets(minimal=10, high=30000))
    target = Target("claude", "an", PROVIDER, "claude-opus-4-1", reasoning=reasoning)
    high = orjson.loads(send(target, reasoning_effort="high", max_tokens=64000).body)
    minimal = orjson.loads(send(target, reasoning_effort="minimal").body)
    assert high["thinking"]["budget_tokens"] == 30000
    assert minimal["thinking"]["budget_tokens"] == 1024


def test_max_tokens_at_or_below_the_budget_is_raised_by_it() -> None:
    """Thinking counts toward max_tokens, which must exceed the budget: the client's limit is
    kept for the answer itself."""
    assert body(reasoning_effort="high", max_tokens=1000)["max_tokens"] == 17384
    assert body(reasoning_effort="high")["max_tokens"] == 4096 + 16384  # the default limit
    assert body(reasoning_effort="low", max_completion_tokens=1025)["max_tokens"] == 1025


def test_no_effort_or_none_sends_no_thinking() -> None:
    assert "thinking" not in body()
    assert "thinking" not in body(reasoning_effort="none")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"temperature": 0.2}, "temperature"),
        ({"top_k": 40}, "top_k"),
        ({"top_p": 0.5}, "top_p"),
    ],
)
def test_sampling_that_thinking_rules_out_is_refused_by_name(
    fields: dict[str, Any], param: str
) -> None:
    error = refusal(reasoning_effort="low", **fields)
    assert error.param == param
    assert "reasoning_effort" in error.message


def test_sampling_thinking_allows_is_sent() -> None:
    sent = body(reasoning_effort="low", temperature=1, top_p=0.97)
    assert (sent["temperature"], sent["top_p"]) == (1, 0.97)


def test_an_unknown_effort_is_refused_naming_the_accepted_ones() -> None:
    error = refusal(reasoning_effort="xhigh")
    assert error.param == "reasoning_effort"
    assert "minimal, low, medium, high" in error.message


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "f"}}]
)
def test_a_forced_tool_choice_turns_thinking_off_and_says_so(tool_choice: Any) -> None:
    request = send(reasoning_effort="high", tools=TOOLS, tool_choice=tool_choice, temperature=0)
    sent = orjson.loads(request.body)
    assert "thinking" not in sent
    assert sent["tool_choice"]["type"] in ("any", "tool")
    assert sent["temperature"] == 0  # thinking is off, so its sampling rules are too
    assert request.warning == TOOL_CHOICE_WARNING


def test_auto_and_none_tool_choice_keep_thinking() -> None:
    for choice in ("auto", "none"):
        assert "thinking" in body(reasoning_effort="low", tools=TOOLS, tool_choice=choice)


def test_thinking_blocks_go_back_first_exactly_as_they_came() -> None:
    """Text and signature unchanged; the `index` our stream deltas add is not Anthropic's."""
    blocks = [{**THINKING, "index": 0}, {**REDACTED, "index": 1}]
    request = send(reasoning_effort="low", tools=TOOLS, messages=loop(blocks=blocks))
    sent = orjson.loads(request.body)
    assert sent["messages"][1]["content"] == [
        THINKING,
        REDACTED,
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
    ]
    assert request.warning is None
    assert "thinking" in sent


def test_a_tool_loop_whose_blocks_are_gone_runs_without_thinking_and_says_so() -> None:
    request = send(reasoning_effort="low", tools=TOOLS, messages=loop(blocks=None))
    assert "thinking" not in orjson.loads(request.body)
    assert request.warning == MISSING_BLOCKS_WARNING.format(n=1)


def test_only_the_message_that_opens_the_current_loop_needs_blocks() -> None:
    """An earlier turn without blocks is fine (Anthropic ignores old thinking), and so is a
    later step of the current loop (without interleaved thinking Claude thinks once, first)."""
    earlier = loop(blocks=None)
    current = assistant_calls(call("toolu_2"))
    current["thinking_blocks"] = [THINKING]
    messages = [
        *earlier,
        {"role": "assistant", "content": "It is 18C."},
        {"role": "user", "content": "And tomorrow?"},
        current,
        {"role": "tool", "tool_call_id": "toolu_2", "content": "20C"},
        assistant_calls(call("toolu_3")),
        {"role": "tool", "tool_call_id": "toolu_3", "content": "done"},
    ]
    request = send(reasoning_effort="low", tools=TOOLS, messages=messages)
    assert request.warning is None
    assert "thinking" in orjson.loads(request.body)


def test_with_thinking_off_history_blocks_are_not_sent() -> None:
    sent = body(tools=TOOLS, messages=loop(blocks=[THINKING]))
    assert [block["type"] for block in sent["messages"][1]["content"]] == ["tool_use"]


@pytest.mark.parametrize(
    ("block", "param"),
    [
        ({"type": "thinking", "thinking": "x"}, "messages[1].thinking_blocks[0]"),
        ({"type": "redacted_thinking"}, "messages[1].thinking_blocks[0]"),
        ({"type": "text", "text": "x"}, "messages[1].thinking_blocks[0]"),
        ("not a block", "messages[1].thinking_blocks[0]"),
    ],
)
def test_malformed_thinking_blocks_are_refused_naming_the_block(block: Any, param: str) -> None:
    assert (
        refusal(reasoning_effort="low", tools=TOOLS, messages=loop(blocks=[block])).param == param
    )


def test_target_default_is_the_contract_budgets() -> None:
    assert TARGET.reasoning == ReasoningConfig()
