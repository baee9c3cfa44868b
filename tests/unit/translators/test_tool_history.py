"""Tool calls and tool results in a chat history, on every translated kind (anthropic, gemini,
bedrock, and Vertex's Claude and Gemini, which use the first two's translations): a history
OpenAI itself refuses (calls left unanswered, a result answering no call of the assistant turn
before it) is refused before anything is sent, with OpenAI's words and param; one it accepts
goes out; and a tool history without `tools` still reaches Claude with tools defined (it
refuses tool blocks otherwise), as it does Bedrock."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import Target, translator_for
from tests.helpers import anthropic_rules

VERTEX = ProviderConfig(kind="vertex", project="p", region="us-east5")
# prompt_cache off: whole tool lists are compared; breakpoints: test_prompt_cache.py.
TARGETS = {
    "anthropic": Target(
        "m",
        "an",
        ProviderConfig(kind="anthropic", api_key="k"),
        "claude-sonnet-4-5",
        prompt_cache="off",
    ),
    "gemini": Target("m", "gm", ProviderConfig(kind="gemini", api_key="k"), "gemini-2.5-flash"),
    "bedrock": Target(
        "m",
        "aws",
        ProviderConfig(kind="bedrock", region="us-east-1"),
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        prompt_cache="off",
    ),
    "vertex-claude": Target("m", "gcp", VERTEX, "claude-sonnet-4-5@20250929", prompt_cache="off"),
    "vertex-gemini": Target("m", "gcp", VERTEX, "gemini-2.5-flash"),
}
KINDS = list(TARGETS)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
ASKED = {"role": "user", "content": "Weather in Paris and Rome?"}
PNG = "data:image/png;base64,iVBORw0KGgo="


def call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    function = {"name": name, "arguments": '{"city": "Paris"}'}
    return {"id": call_id, "type": "function", "function": function}


def calls(*ids: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [call(i) for i in ids]}


def result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"18C ({call_id})"}


def build(kind: str, messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    target = TARGETS[kind]
    request = parse_chat_request(orjson.dumps({"model": "m", "messages": messages, **fields}))
    translator = translator_for(TRANSLATORS, target)
    sent: dict[str, Any] = orjson.loads(translator.build_request(request, target).body)
    return sent


def refusal(kind: str, messages: list[dict[str, Any]]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        build(kind, messages, tools=TOOLS)
    assert caught.value.status == 400
    return caught.value


UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("messages", "missing", "position"),
    [
        ([ASKED, calls("c1")], "c1", 1),
        ([ASKED, calls("c1"), {"role": "user", "content": "never mind"}], "c1", 1),
        ([ASKED, calls("c1", "c2", "c3"), result("c2")], "c1, c3", 1),
        ([ASKED, calls("c1"), result("c1"), calls("c2"), ASKED], "c2", 3),
        ([ASKED, calls("c1", "c2"), result("c1"), calls("c3"), result("c3")], "c2", 1),
    ],
)
def test_calls_left_unanswered_are_refused_as_openai_refuses_them(
    kind: str, messages: list[dict[str, Any]], missing: str, position: int
) -> None:
    error = refusal(kind, messages)
    assert error.message == UNANSWERED + missing
    assert error.param == f"messages.[{position}].role"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("messages", "position"),
    [
        ([ASKED, result("c1")], 1),
        ([result("c1")], 0),
        ([ASKED, calls("c1"), result("c1"), result("c2")], 3),
        # answering a call of an earlier turn, not of the assistant turn right before
        ([ASKED, calls("c1"), result("c1"), ASKED, result("c1")], 4),
    ],
)
def test_a_result_answering_no_call_of_the_turn_before_is_refused_as_openai_refuses_it(
    kind: str, messages: list[dict[str, Any]], position: int
) -> None:
    error = refusal(kind, messages)
    assert error.message == ORPHAN
    assert error.param == f"messages.[{position}].role"


LEGITIMATE = {
    "answered": [ASKED, calls("c1"), result("c1")],
    "parallel, answered in another order": [ASKED, calls("c1", "c2"), result("c2"), result("c1")],
    "results then images as a user turn": [
        ASKED,
        calls("c1", "c2"),
        result("c1"),
        result("c2"),
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG}}]},
    ],
    "a system message between calls and results (it is hoisted)": [
        ASKED,
        calls("c1"),
        {"role": "system", "content": "be brief"},
        result("c1"),
    ],
    "text and calls as two assistant messages (they merge)": [
        ASKED,
        {"role": "assistant", "content": "Let me look."},
        calls("c1"),
        {"role": "assistant", "content": "And Rome."},
        calls("c2"),
        result("c1"),
        result("c2"),
    ],
    "turn after turn, then the answer": [
        ASKED,
        calls("c1"),
        result("c1"),
        calls("c2", content="Now Rome."),
        result("c2"),
        {"role": "assistant", "content": "18C in both."},
    ],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("messages", LEGITIMATE.values(), ids=LEGITIMATE.keys())
def test_a_history_openai_accepts_goes_out(kind: str, messages: list[dict[str, Any]]) -> None:
    assert build(kind, messages, tools=TOOLS)


THINKING = {"type": "thinking", "thinking": "Paris first.", "signature": "c2lnbmF0dXJl"}


@pytest.mark.parametrize("kind", ["anthropic", "bedrock", "vertex-claude"])
def test_a_history_with_thinking_blocks_goes_out(kind: str) -> None:
    thought = {**calls("c1"), "thinking_blocks": [THINKING]}
    messages = [ASKED, thought, result("c1")]
    assert build(kind, messages, tools=TOOLS, reasoning_effort="low")


@pytest.mark.parametrize("kind", ["anthropic", "vertex-claude"])
def test_a_tool_history_without_tools_reaches_claude_with_the_called_tools(kind: str) -> None:
    messages = [ASKED, calls("c1"), result("c1"), {**calls("c2"), "tool_calls": [call("c2", "t")]}]
    sent = build(kind, [*messages, result("c2")])
    assert sent["tools"] == [
        {"name": "get_weather", "input_schema": {"type": "object"}},
        {"name": "t", "input_schema": {"type": "object"}},
    ]
    # The client defined no tools: Claude may not call these.
    assert sent["tool_choice"] == {"type": "none"}
    assert anthropic_rules.request_problems({"model": "m", **sent}) == []


@pytest.mark.parametrize("kind", ["anthropic", "vertex-claude"])
def test_without_tool_blocks_no_tools_are_sent(kind: str) -> None:
    sent = build(kind, [ASKED])
    assert "tools" not in sent
    assert "tool_choice" not in sent


@pytest.mark.parametrize("kind", ["anthropic", "vertex-claude"])
def test_the_clients_own_tools_are_sent_as_they_are(kind: str) -> None:
    sent = build(kind, [ASKED, calls("c1", "c2"), result("c1"), result("c2")], tools=TOOLS)
    assert [tool["name"] for tool in sent["tools"]] == ["get_weather"]
    assert "tool_choice" not in sent


def test_a_called_name_claude_would_refuse_as_a_tool_is_declared_made_safe() -> None:
    other = {**calls("c1"), "tool_calls": [call("c1", "functions.get_weather")]}
    sent = build("anthropic", [ASKED, other, result("c1")])
    assert sent["tools"] == [{"name": "functions_get_weather", "input_schema": {"type": "object"}}]
    assert anthropic_rules.request_problems({"model": "m", **sent}) == []
