"""MCP items in a conversation -> what the model reads (CONTRACT.md, "MCP"): an `mcp_call` is
the call the model made and its result (its output, or its error said plainly); a denied
approval is the call and "denied"; a tool list and a pending approval are not part of the
chat. The call's function name is the one the loop offers it under, `LABEL__TOOL` made a
name every kind takes (offered_name)."""

from __future__ import annotations

from typing import Any

import orjson

from app.faces.responses.tools import function_name, joined_name
from app.translators.gemini.ids import SIGNATURE_MARK, signature_of

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
    return {"name": offered_name(name, label), "arguments": arguments or "{}"}


def offered_name(name: str, label: str) -> str:
    """The function an MCP tool is offered as, and its calls replayed under: `LABEL__TOOL`.
    MCP names may hold dots and run long, and a request's own `server_label` may hold
    anything, but a function name the upstream (or the chat request's own check) refuses
    would fail every request naming the server: function_name makes it one every kind takes,
    the same every time."""
    return function_name(joined_name(name, label))


def item_id(fresh: str, model_call_id: str) -> str:
    """An `mcp_call` or `mcp_approval_request` id (`fresh`, from ItemIds) that keeps the
    thought signature the model's call id carried (the gemini kind's, ids.py): OpenAI's items
    hold no call id, yet Gemini 3 refuses its call replayed without its signature, in a later
    round, a later turn, or after an approval, and with `store: false` only the items come
    back. The id stays opaque to clients; chat_call_id reads it back."""
    if signature_of(model_call_id) is None:
        return fresh
    return fresh + model_call_id[model_call_id.index(SIGNATURE_MARK) :]


def chat_call_id(mcp_item_id: str) -> str:
    """The call id an mcp item's call is replayed under: its own id, or where it carries a
    signature (item_id), `call_0_<rest>`, which the gemini kind takes the signature from."""
    if SIGNATURE_MARK not in mcp_item_id or "_" not in mcp_item_id:
        return mcp_item_id
    return "call_0_" + mcp_item_id.split("_", 1)[1]
