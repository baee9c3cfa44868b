"""app/faces/responses/mcp_history.py and History's mcp items: what the model reads of a
conversation's MCP items. An `mcp_call` is the call (as `LABEL__TOOL`) and its result or its
error said plainly; a denied approval is the call and the denial; a tool list, a pending or
approved approval request are no part of the chat; a malformed call is a 400."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidRequest
from app.faces.responses.history import History
from app.faces.responses.mcp_history import DENIED, mcp_function, told_model

USER = {"role": "user", "content": "hi"}
CALL = {
    "type": "mcp_call",
    "id": "mcp_1",
    "server_label": "calc",
    "name": "add",
    "arguments": '{"a": 1}',
    "output": "3",
    "error": None,
    "status": "completed",
}
REQUEST = {
    "type": "mcp_approval_request",
    "id": "mcpr_1",
    "server_label": "calc",
    "name": "add",
    "arguments": "{}",
}


def messages(*items: Any) -> list[dict[str, Any]]:
    history = History([])
    for position, item in enumerate(items):
        history.add(item, f"input[{position}]")
    return history.close()


@pytest.mark.parametrize(
    ("item", "told"),
    [
        ({"output": "3", "status": "completed"}, "3"),
        ({"output": "", "status": "completed"}, ""),
        ({"output": "3"}, "3"),
        ({"output": "3", "status": "failed"}, "The tool call failed."),
        ({"output": None, "error": None}, "The tool call failed."),
        ({"output": 5, "error": "x"}, "The tool call failed."),
        (
            {
                "error": {
                    "type": "mcp_tool_execution_error",
                    "content": [{"type": "text", "text": "no"}],
                }
            },
            "Tool error: no",
        ),
        (
            {"error": {"type": "mcp_tool_execution_error", "content": [{"type": "image"}]}},
            'Tool error: [{"type":"image"}]',
        ),
        ({"error": {"type": "mcp_tool_execution_error", "content": 5}}, "Tool error: 5"),
        (
            {"error": {"type": "http_error", "code": 401, "message": "denied"}},
            "Tool call failed (http_error 401): denied",
        ),
    ],
)
def test_told_model(item: dict[str, Any], told: str) -> None:
    assert told_model(item) == told


def test_mcp_function_is_label__tool_or_none_when_malformed() -> None:
    assert mcp_function(CALL) == {"name": "calc__add", "arguments": '{"a": 1}'}
    assert mcp_function({**CALL, "arguments": ""}) == {"name": "calc__add", "arguments": "{}"}
    for broken in ({"server_label": None}, {"name": 3}, {"arguments": {"a": 1}}):
        assert mcp_function({**CALL, **broken}) is None


def test_an_mcp_call_is_the_call_and_its_result() -> None:
    assert messages(USER, CALL) == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "mcp_1",
                    "type": "function",
                    "function": {"name": "calc__add", "arguments": '{"a": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "mcp_1", "content": "3"},
    ]


def test_tool_lists_and_pending_or_approved_requests_are_not_in_the_chat() -> None:
    listed = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "calc", "tools": []}
    approved = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
    assert messages(USER, listed, REQUEST, approved) == [USER]


def test_a_denied_request_is_the_call_and_the_denial() -> None:
    denied = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False}
    result = messages(USER, REQUEST, denied)
    assert result[1]["tool_calls"][0]["function"] == {"name": "calc__add", "arguments": "{}"}
    assert result[1]["tool_calls"][0]["id"] == "mcpr_1"
    assert result[2] == {"role": "tool", "tool_call_id": "mcpr_1", "content": DENIED}


def test_a_denial_of_an_unknown_request_adds_nothing() -> None:
    denied = {"type": "mcp_approval_response", "approval_request_id": "nope", "approve": False}
    assert messages(USER, denied) == [USER]


def test_a_text_after_a_call_is_a_new_assistant_turn() -> None:
    said = {"role": "assistant", "content": "done"}
    result = messages(USER, CALL, said)
    assert [m["role"] for m in result] == ["user", "assistant", "tool", "assistant"]
    assert result[-1]["content"] == "done"


@pytest.mark.parametrize(
    "broken",
    [
        {"id": None},
        {"id": 5},
        {"server_label": 5},
        {"name": None},
        {"arguments": {"a": 1}},
    ],
)
def test_a_malformed_mcp_call_is_a_400(broken: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest) as caught:
        messages(USER, {**CALL, **broken})
    assert caught.value.param == "input[1]"


def test_a_denied_request_that_is_malformed_is_a_400() -> None:
    denied = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False}
    with pytest.raises(InvalidRequest) as caught:
        messages(USER, {**REQUEST, "name": 5}, denied)
    assert caught.value.param == "input[2]"
