"""MCP items in a conversation -> what the model reads (CONTRACT.md, "MCP"): an `mcp_call` is
the call the model made and its result (its output, or its error said plainly); a denied
approval is the call and "denied"; a tool list and a pending approval are not part of the
chat. The call's function name is the one the loop offers it under, `LABEL__TOOL`."""

from __future__ import annotations

from typing import Any

import orjson

from app.faces.responses.tools import upstream_name

DENIED = "The user denied this tool call."
MCP_ITEM_TYPES = frozenset(
    {"mcp_list_tools", "mcp_call", "mcp_approval_request", "mcp_approval_response"}
)


def told_model(item: dict[str, Any]) -> str:
    """What the model reads as an `mcp_call`'s result."""
    if item.get("status") != "failed" and isinstance(item.get("output"), str):
        return str(item["output"])
    error = item.get("error")
    if not isinstance(error, dict):
        return "The tool call failed."
    if error.get("type") == "mcp_tool_execution_error":
        content = error.get("content")
        blocks = content if isinstance(content, list) else []
        texts = [str(b.get("text")) for b in blocks if isinstance(b, dict) and b.get("text")]
        return "Tool error: " + ("\n".join(texts) or orjson.dumps(content).decode())
    return f"Tool call failed ({error.get('type')} {error.get('code')}): {error.get('message')}"


def mcp_function(item: dict[str, Any]) -> dict[str, Any] | None:
    """The chat call of an `mcp_call` or `mcp_approval_request` item (None when malformed)."""
    label, name, arguments = item.get("server_label"), item.get("name"), item.get("arguments")
    if not (isinstance(label, str) and isinstance(name, str) and isinstance(arguments, str)):
        return None
    return {"name": upstream_name(name, label), "arguments": arguments or "{}"}
