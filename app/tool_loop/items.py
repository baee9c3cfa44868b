"""The MCP output items, in OpenAI's shapes (its spec's MCPListTools, MCPToolCall,
MCPApprovalRequest): pure builders, shared by the non-stream answer and the stream."""

from __future__ import annotations

from typing import Any

import orjson

from app.mcp.types import McpFailure, McpResult, McpTool

Item = dict[str, Any]


def list_item(item_id: str, label: str, tools: list[McpTool]) -> Item:
    return {
        "id": item_id,
        "type": "mcp_list_tools",
        "server_label": label,
        "tools": [listed_tool(tool) for tool in tools],
        "error": None,
    }


def listed_tool(tool: McpTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "annotations": tool.annotations,
    }


def call_item(
    item_id: str, label: str, name: str, arguments: str, approval_request_id: str | None = None
) -> Item:
    """An `mcp_call` before it ran (`in_progress`, no output): the stream's added item."""
    return {
        "id": item_id,
        "type": "mcp_call",
        "server_label": label,
        "name": name,
        "arguments": arguments,
        "output": None,
        "error": None,
        "status": "in_progress",
        "approval_request_id": approval_request_id,
    }


def ran(item: Item, outcome: McpResult | McpFailure) -> Item:
    """The call's item once it ran: its text output, or the spec's error object."""
    if isinstance(outcome, McpResult) and not outcome.is_error:
        return {**item, "output": result_text(outcome), "status": "completed"}
    if isinstance(outcome, McpResult):
        error: dict[str, Any] = {"type": "mcp_tool_execution_error", "content": outcome.content}
    elif outcome.kind == "protocol":
        error = {"type": "mcp_protocol_error", "code": outcome.code or 0}
        error["message"] = outcome.message
    else:
        error = {"type": "http_error", "code": outcome.code or 0, "message": outcome.message}
    return {**item, "output": None, "error": error, "status": "failed"}


def result_text(result: McpResult) -> str:
    """The text content, joined; a result with none (structured only) as its JSON."""
    texts = [block["text"] for block in result.content if block.get("type") == "text"]
    if texts:
        return "\n".join(str(text) for text in texts)
    if result.structured is not None:
        return orjson.dumps(result.structured).decode()
    return ""


def approval_item(item_id: str, label: str, name: str, arguments: str) -> Item:
    return {
        "id": item_id,
        "type": "mcp_approval_request",
        "server_label": label,
        "name": name,
        "arguments": arguments,
    }
