"""app/tool_loop/items.py and listing.known_lists: the MCP output items as OpenAI's published
schemas have them (MCPListTools, MCPToolCall with each error kind, MCPApprovalRequest,
checked with tests/conformance/spec.py), and a conversation's tool lists read back however
they were sent."""

from __future__ import annotations

from typing import Any

import pytest

from app.mcp.types import McpFailure, McpResult, McpTool
from app.tool_loop.items import approval_item, call_item, list_item, ran, result_text
from app.tool_loop.listing import known_lists
from tests.conformance import spec

ADD = McpTool("add", "Add.", {"type": "object"}, {"type": "object"}, {"readOnlyHint": True})
BARE = McpTool("bare", None, {"type": "object"}, None, None)


def test_a_list_item_is_openais_mcp_list_tools() -> None:
    item = list_item("mcpl_1", "calc", [ADD, BARE])
    spec.check("MCPListTools", item)
    assert item["tools"][0] == {
        "name": "add",
        "description": "Add.",
        "input_schema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    }
    assert "output_schema" not in item["tools"][0]
    spec.check("MCPListTools", list_item("mcpl_2", "calc", []))


def test_a_call_in_progress_and_done_is_openais_mcp_call() -> None:
    started = call_item("mcp_1", "calc", "add", '{"a": 1}', "mcpr_1")
    spec.check("MCPToolCall", started)
    assert (started["status"], started["output"], started["error"]) == ("in_progress", None, None)
    done = ran(started, McpResult([{"type": "text", "text": "3"}], None, is_error=False))
    spec.check("MCPToolCall", done)
    assert (done["status"], done["output"], done["approval_request_id"]) == (
        "completed",
        "3",
        "mcpr_1",
    )
    assert started["status"] == "in_progress"  # a new dict, the added item unchanged


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        (
            McpResult([{"type": "text", "text": "boom"}], None, is_error=True),
            {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": "boom"}]},
        ),
        (
            McpFailure("protocol", -32602, "bad params"),
            {"type": "mcp_protocol_error", "code": -32602, "message": "bad params"},
        ),
        (
            McpFailure("protocol", None, "no code"),
            {"type": "mcp_protocol_error", "code": 0, "message": "no code"},
        ),
        (
            McpFailure("http", 401, "unauthorized"),
            {"type": "http_error", "code": 401, "message": "unauthorized"},
        ),
        (
            McpFailure("http", None, "connection failed"),
            {"type": "http_error", "code": 0, "message": "connection failed"},
        ),
    ],
)
def test_a_failed_call_carries_the_specs_error_object(outcome: Any, error: Any) -> None:
    item = ran(call_item("mcp_1", "calc", "add", "{}"), outcome)
    spec.check("MCPToolCall", item)
    spec.check("MCPToolCallError", item["error"])
    assert (item["status"], item["output"], item["error"]) == ("failed", None, error)


def test_an_approval_request_is_openais() -> None:
    item = approval_item("mcpr_1", "calc", "add", '{"a": 1}')
    spec.check("MCPApprovalRequest", item)
    assert set(item) == {"id", "type", "server_label", "name", "arguments"}


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (
            McpResult([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], None, False),
            "a\nb",
        ),
        (McpResult([{"type": "image", "data": "x"}], {"n": 3}, False), '{"n":3}'),
        (McpResult([{"type": "text", "text": "5"}], {"result": 5}, False), "5"),
        (McpResult([], None, False), ""),
    ],
)
def test_result_text_joins_the_text_else_the_structured_json(result: McpResult, text: str) -> None:
    assert result_text(result) == text


def test_known_lists_reads_every_list_in_the_conversation_by_label() -> None:
    items = [
        {"type": "message", "role": "user", "content": "hi"},
        {
            "type": "mcp_list_tools",
            "server_label": "calc",
            "tools": [
                {"name": "add", "description": "Add.", "input_schema": {"type": "object"}},
                {"name": "odd", "description": 5, "input_schema": 5, "annotations": "x"},
                {"description": "no name"},
                "junk",
                {"name": 3},
            ],
        },
        {"type": "mcp_list_tools", "server_label": "empty", "tools": []},
        {"type": "mcp_list_tools", "server_label": 5, "tools": []},
        {"type": "mcp_list_tools", "server_label": "nolist", "tools": {"name": "x"}},
        "junk",
    ]
    known = known_lists(items)
    assert set(known) == {"calc", "empty"}
    assert known["empty"] == []
    assert known["calc"] == [
        McpTool("add", "Add.", {"type": "object"}, None, None),
        McpTool("odd", None, {"type": "object"}, None, None),
    ]


def test_a_later_list_of_the_same_server_replaces_the_earlier() -> None:
    first = {"type": "mcp_list_tools", "server_label": "calc", "tools": [{"name": "add"}]}
    second = {"type": "mcp_list_tools", "server_label": "calc", "tools": [{"name": "echo"}]}
    assert [tool.name for tool in known_lists([first, second])["calc"]] == ["echo"]
