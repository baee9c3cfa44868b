"""The pure parts of compaction: the `compaction` item's encoding (app/faces/responses/
compaction.py), its expansion in place in a request (History), a stored chain cut at its
trigger, the summary request (app/compaction/summary.py) and what `/compact` keeps."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from app.compaction.chain import kept_messages
from app.compaction.instructions import INSTRUCTIONS
from app.compaction.summary import summary_request
from app.errors import InvalidRequest
from app.faces.responses.compaction import (
    PREFIX,
    SUMMARY_HEADING,
    compacted,
    compaction_content,
    compaction_item,
    summary_of,
)
from app.faces.responses.request import translate

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}
CALL = {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
TRIGGER = {"type": "compaction_trigger"}
TOOLS = [{"type": "function", "name": "sh", "parameters": {"type": "object"}}]


@pytest.mark.parametrize("summary", ["", "plain", 'ünïcode \u2028 and "quotes"\n' * 50])
def test_a_summary_round_trips_through_its_content(summary: str) -> None:
    content = compaction_content(summary)
    assert content.startswith(PREFIX)
    assert summary not in content or not summary  # opaque: not the text as it is
    assert summary_of(content) == summary


@pytest.mark.parametrize(
    "content",
    [
        None,
        7,
        "gAAAAABopenai-encrypted",
        PREFIX + "not base64!",
        PREFIX + base64.b64encode(b"not json").decode(),
        PREFIX + base64.b64encode(orjson.dumps(["a list"])).decode(),
        PREFIX + base64.b64encode(orjson.dumps({"summary": 3})).decode(),
        "trb1:" + base64.b64encode(orjson.dumps({"summary": "a reasoning prefix"})).decode(),
    ],
)
def test_content_that_is_not_ours_reads_as_nothing(content: Any) -> None:
    assert summary_of(content) is None


def messages(items: list[Any], history: list[Any] | None = None) -> list[dict[str, Any]]:
    wire = translate({"model": "m", "input": items}, history or [])
    return list(wire.wire["messages"])


def test_a_compaction_item_becomes_its_summary_in_place() -> None:
    item = compaction_item("cmp_1", "did X, Y is left")
    after = {"type": "message", "role": "user", "content": "go on"}
    assert messages([USER, item, after]) == [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {"role": "user", "content": SUMMARY_HEADING + "did X, Y is left"},
        {"role": "user", "content": "go on"},
    ]


def test_a_compaction_item_not_made_here_is_refused_by_position() -> None:
    foreign = {"type": "compaction", "id": "cmp_x", "encrypted_content": "gAAAAB-openai"}
    with pytest.raises(InvalidRequest) as refused:
        messages([USER, foreign])
    assert refused.value.param == "input[1]"
    assert "input[1]" in refused.value.message
    assert "not made by ToolRelay" in refused.value.message


def test_a_trigger_anywhere_but_last_is_nothing_to_the_model() -> None:
    assert messages([USER, TRIGGER, {"role": "user", "content": "x"}]) == [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {"role": "user", "content": "x"},
    ]


def test_a_stored_chain_keeps_only_user_messages_before_its_last_trigger() -> None:
    first = compaction_item("cmp_1", "one")
    second = compaction_item("cmp_2", "two")
    reply = {"type": "message", "role": "assistant", "content": "hi"}
    plain_user = {"role": "user", "content": "plain"}
    history = [USER, CALL, OUTPUT, TRIGGER, first, reply, plain_user, CALL, TRIGGER, second]
    assert compacted(history) == [USER, plain_user, second]
    assert compacted([USER, CALL, OUTPUT]) == [USER, CALL, OUTPUT]
    assert compacted([TRIGGER]) == []


def test_compact_keeps_the_user_messages_as_they_were() -> None:
    plain_user = {"role": "user", "content": "plain"}
    developer = {"type": "message", "role": "developer", "content": "rules"}
    kept = kept_messages([developer, USER, CALL, OUTPUT, plain_user, compaction_item("c", "s")])
    assert kept == [USER, {"type": "message", **plain_user}]


def test_the_summary_request_is_the_conversation_then_the_instructions() -> None:
    body = {
        "model": "m",
        "instructions": "You are a coding agent.",
        "tools": TOOLS,
        "tool_choice": "required",
        "text": {"format": {"type": "json_object"}},
        "max_output_tokens": 5,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "k",
        "reasoning": {"effort": "low"},
    }
    wire = summary_request(body, [USER], [CALL, OUTPUT]).wire
    assert wire["messages"][0] == {"role": "system", "content": "You are a coding agent."}
    assert wire["messages"][-1] == {"role": "user", "content": INSTRUCTIONS}
    assert [m["role"] for m in wire["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert wire["tool_choice"] == "none"  # declared, so the history's calls stand; not callable
    assert [tool["function"]["name"] for tool in wire["tools"]] == ["sh"]
    assert wire["reasoning_effort"] == "low"
    for dropped in ("stream", "response_format", "max_completion_tokens"):
        assert dropped not in wire


def test_the_summary_request_without_tools_has_no_tool_choice() -> None:
    wire = summary_request({"model": "m"}, [], [USER]).wire
    assert "tool_choice" not in wire
    assert "tools" not in wire


def test_the_instructions_ask_for_what_an_agent_needs_to_carry_on() -> None:
    for needed in ("Task", "Decisions", "Files", "Commands", "Errors", "Current state", "Next"):
        assert needed in INSTRUCTIONS
