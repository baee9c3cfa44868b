"""A system message in the middle of a conversation (Claude Code sends them; chat clients send
one after user turns) on the kinds with no mid-conversation system role (anthropic, gemini,
bedrock, Vertex's Claude and Gemini): it stays where it stands as a user turn marked
`<system>...</system>`, so the start of the prompt (system text, tools, earlier turns) is the
same before and after it appears and the provider's prompt cache still matches it (CONTRACT.md,
"Prompt caching"). Held past tool results, which must follow their calls, and every body still
passes the provider's rules."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import translator_for
from tests.helpers import anthropic_rules, bedrock_rules, gemini_rules
from tests.unit.translators.test_tool_history import KINDS, TARGETS, TOOLS, build, call, result

SYSTEM = {"role": "system", "content": "You are a careful agent."}
FIRST = {"role": "user", "content": "Fix the bug."}
ANSWER = {"role": "assistant", "content": "Looking."}
LATER_RULE = {"role": "system", "content": "Plan mode is on."}
NEXT = {"role": "user", "content": "Go on."}


def instruction(kind: str, sent: dict[str, Any]) -> Any:
    return sent.get("systemInstruction") if "gemini" in kind else sent.get("system")


def turns(kind: str, sent: dict[str, Any]) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = sent["contents"] if "gemini" in kind else sent["messages"]
    return listed


def texts(kind: str, turn: dict[str, Any]) -> list[str]:
    blocks = turn["parts"] if "gemini" in kind else turn["content"]
    return [block["text"] for block in blocks if "text" in block]


def problems(kind: str, sent: dict[str, Any]) -> list[str]:
    if "gemini" in kind:
        return gemini_rules.request_problems(sent)
    if kind == "bedrock":
        problem = bedrock_rules.request_problem(TARGETS[kind].upstream_model, sent, stream=False)
        return [problem] if problem else []
    return anthropic_rules.request_problems(sent)


@pytest.mark.parametrize("kind", KINDS)
def test_a_later_system_message_leaves_the_prompts_start_as_it_was(kind: str) -> None:
    before = build(kind, [SYSTEM, FIRST, ANSWER], tools=TOOLS)
    after = build(kind, [SYSTEM, FIRST, ANSWER, LATER_RULE, NEXT], tools=TOOLS)
    assert instruction(kind, after) == instruction(kind, before)
    assert turns(kind, after)[:2] == turns(kind, before)[:2]
    assert texts(kind, turns(kind, after)[2]) == ["<system>Plan mode is on.</system>", "Go on."]
    assert problems(kind, after) == []


@pytest.mark.parametrize("kind", KINDS)
def test_one_that_ends_the_conversation_is_its_last_user_turn(kind: str) -> None:
    sent = build(kind, [SYSTEM, FIRST, LATER_RULE])
    assert texts(kind, turns(kind, sent)[-1]) == [
        "Fix the bug.",
        "<system>Plan mode is on.</system>",
    ]
    assert problems(kind, sent) == []


@pytest.mark.parametrize("kind", KINDS)
def test_one_between_calls_and_their_results_goes_after_the_results(kind: str) -> None:
    calls = {"role": "assistant", "content": None, "tool_calls": [call("call_1")]}
    messages = [SYSTEM, FIRST, calls, LATER_RULE, result("call_1"), NEXT]
    sent = build(kind, messages, tools=TOOLS)
    last = turns(kind, sent)[-1]
    blocks = last["parts"] if "gemini" in kind else last["content"]
    assert texts(kind, last) == ["<system>Plan mode is on.</system>", "Go on."]
    first_text = next(i for i, block in enumerate(blocks) if "text" in block)
    assert first_text == len(blocks) - 2, "the tool result comes first"
    assert problems(kind, sent) == []


@pytest.mark.parametrize("kind", ["anthropic", "bedrock", "vertex-claude"])
def test_caching_on_a_later_system_message_stays_a_turn(kind: str) -> None:
    """The leading system messages' breakpoints are the system text's; a later one is a turn
    (zipping every system message's control with the hoisted ones raised: a 500)."""
    target = dataclasses.replace(TARGETS[kind], prompt_cache="auto")
    messages = [SYSTEM, FIRST, ANSWER, LATER_RULE, NEXT]
    request = parse_chat_request(orjson.dumps({"model": "m", "messages": messages}))
    sent = orjson.loads(translator_for(TRANSLATORS, target).build_request(request, target).body)
    assert "Plan mode is on." in str(turns(kind, sent)[2])
    assert "Plan mode is on." not in str(instruction(kind, sent))
