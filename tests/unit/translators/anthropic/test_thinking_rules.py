"""The mock Anthropic's thinking rules catch each violation they encode (so the e2e tool loop
passing means the proxy honoured them), accept what Anthropic accepts, and the mock learns
the signatures of what it streams as well as of what it answers whole."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import thinking_rules as rules
from tests.helpers.mock_anthropic import (
    issued_thinking,
    message_events,
    sign,
    thinking_block,
    thinking_tool_message,
)
from tests.helpers.mock_upstream import Reply, anthropic_frames

THOUGHT = "Read a.txt first."
ISSUED = {sign(THOUGHT): THOUGHT, "EmwKAhgBEgy3redacted": ""}
USE = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}
QUESTION = {"role": "user", "content": "What does a.txt say?"}
ON = {"type": "enabled", "budget_tokens": 2048}


def loop(*opening: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        QUESTION,
        {"role": "assistant", "content": [*opening, USE]},
        {"role": "user", "content": [RESULT]},
    ]


def problems(messages: list[dict[str, Any]], **fields: Any) -> list[str]:
    body = {"max_tokens": 4096, "thinking": ON, "messages": messages, **fields}
    return rules.thinking_problems(body, ISSUED)


def test_a_loop_replayed_with_its_thinking_first_is_taken() -> None:
    assert problems(loop(thinking_block(THOUGHT))) == []
    assert problems(loop({"type": "redacted_thinking", "data": "EmwKAhgBEgy3redacted"})) == []


def test_a_loop_without_its_thinking_is_refused_with_anthropics_text() -> None:
    [problem] = problems(loop())
    assert problem.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start"
    )


def test_only_the_message_that_opens_the_trailing_loop_must_start_with_thinking() -> None:
    later_turn = [
        {"role": "assistant", "content": [{**USE, "id": "toolu_2"}]},
        {"role": "user", "content": [{**RESULT, "tool_use_id": "toolu_2"}]},
    ]
    assert problems(loop(thinking_block(THOUGHT)) + later_turn) == []
    assert problems([*loop(), {"role": "assistant", "content": "Done."}, QUESTION]) == []


@pytest.mark.parametrize(
    "block",
    [
        {"type": "thinking", "thinking": THOUGHT + " (edited)", "signature": sign(THOUGHT)},
        {"type": "thinking", "thinking": "Invented.", "signature": sign("Invented.")},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3forged"},
    ],
    ids=["edited", "invented", "forged-redacted"],
)
def test_thinking_not_as_issued_is_refused(block: dict[str, Any]) -> None:
    assert problems(loop(block)) == [
        rules.BAD_SIGNATURE.format(n=1, i=0)
        if block["type"] == "thinking"
        else rules.BAD_REDACTED.format(n=1, i=0)
    ]


def test_keys_anthropic_does_not_define_are_refused() -> None:
    block = thinking_block(THOUGHT) | {"index": 0}
    assert problems(loop(block)) == [
        "messages.1.content.0.thinking.index: Extra inputs are not permitted"
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 512}}, rules.BUDGET_TOO_SMALL),
        ({"max_tokens": 2048}, rules.BUDGET_OVER_MAX),
        ({"temperature": 0.2}, rules.TEMPERATURE),
        ({"top_k": 5}, rules.TOP_K),
        ({"top_p": 0.5}, rules.TOP_P),
        ({"tool_choice": {"type": "any"}}, rules.FORCED_TOOL),
        ({"tool_choice": {"type": "tool", "name": "read"}}, rules.FORCED_TOOL),
    ],
)
def test_settings_thinking_rules_out_are_refused(fields: dict[str, Any], expected: str) -> None:
    assert problems([QUESTION], **fields) == [expected]


def test_settings_thinking_allows_are_taken() -> None:
    allowed = {"temperature": 1, "top_p": 0.95, "tool_choice": {"type": "auto"}}
    assert problems([QUESTION], **allowed) == []


def test_with_thinking_off_a_final_assistant_message_may_not_carry_thinking() -> None:
    final = {"role": "assistant", "content": [thinking_block(THOUGHT)]}
    body = {"max_tokens": 4096, "messages": [QUESTION, final]}
    assert rules.thinking_problems(body, ISSUED) == [
        rules.THINKING_WHEN_OFF.format(n=1, i=0, type="thinking")
    ]
    off_loop = {"max_tokens": 4096, "messages": loop()}
    assert rules.thinking_problems(off_loop, ISSUED) == []


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_mock_learns_the_thinking_it_hands_out(stream: bool) -> None:
    message = thinking_tool_message(THOUGHT, [("toolu_1", "read", {"path": "a.txt"})])
    reply = (
        Reply(frames=anthropic_frames(message_events(message))) if stream else Reply(json=message)
    )
    assert issued_thinking(reply) == {sign(THOUGHT): THOUGHT}
