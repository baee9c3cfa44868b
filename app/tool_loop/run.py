"""Running one model call to an MCP tool: its arguments parsed, the call made through the
registry, and the `mcp_call` item it becomes (a failure is the item's error, never the
request's: the model is told and the response goes on)."""

from __future__ import annotations

from typing import Any

import orjson

from app.mcp.registry import McpServers
from app.mcp.types import McpFailure, McpResult
from app.tool_loop.items import Item, ran
from app.tool_loop.offer import OfferedTool

INVALID_PARAMS = -32602


async def run_call(mcp: McpServers, offered: OfferedTool, item: Item) -> tuple[Item, bool]:
    """`item`: the call's `mcp_call` item as added (in progress); returns it as done, and
    whether the server was called (arguments that are not an object never leave the proxy)."""
    arguments = _arguments(item["arguments"])
    if arguments is None:
        failure = McpFailure(
            "protocol", INVALID_PARAMS, "the model's arguments are not a JSON object"
        )
        return ran(item, failure), False
    outcome: McpResult | McpFailure
    try:
        outcome = await mcp.call_tool(offered.server.server, offered.tool.name, arguments)
    except McpFailure as failure:
        outcome = failure
    return ran(item, outcome), True


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None
