"""Listing each hosted server's tools once per response (CONTRACT.md, "MCP"): a server whose
`mcp_list_tools` item is already in the conversation is not listed again; the others are
listed concurrently before any model call, and one that cannot be listed fails the request
with OpenAI's 424. The request's `allowed_tools` filters each list; a filter that leaves no
tool is refused, so no model is ever asked with the tools silently gone."""

from __future__ import annotations

import asyncio
from typing import Any

from app.errors import InvalidRequest
from app.faces.responses.output import ItemIds
from app.mcp.registry import McpServers
from app.mcp.types import McpFailure, McpTool
from app.tool_loop.hosted import HostedServer, McpListingFailed
from app.tool_loop.items import Item, list_item

Listed = list[tuple[HostedServer, list[McpTool]]]


def known_lists(items: list[Any]) -> dict[str, list[McpTool]]:
    """The tools of every `mcp_list_tools` item in the conversation, by server label."""
    known: dict[str, list[McpTool]] = {}
    for item in items:
        if isinstance(item, dict) and item.get("type") == "mcp_list_tools":
            tools = item.get("tools")
            label = item.get("server_label")
            if isinstance(label, str) and isinstance(tools, list):
                known[label] = [_tool(tool) for tool in tools if _is_tool(tool)]
    return known


def _is_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("name"), str)


def _tool(tool: dict[str, Any]) -> McpTool:
    schema = tool.get("input_schema")
    annotations = tool.get("annotations")
    description = tool.get("description")
    return McpTool(
        name=tool["name"],
        description=description if isinstance(description, str) else None,
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
        output_schema=None,
        annotations=annotations if isinstance(annotations, dict) else None,
    )


async def list_servers(
    servers: list[HostedServer], known: dict[str, list[McpTool]], mcp: McpServers, ids: ItemIds
) -> tuple[list[Item], Listed]:
    """New `mcp_list_tools` items (for servers not listed before), and every server's tools
    as the model will be offered them."""
    fresh = [server for server in servers if server.label not in known]
    results = await asyncio.gather(
        *(mcp.list_tools(server.server) for server in fresh), return_exceptions=True
    )
    lists = dict(known)
    for server, result in zip(fresh, results, strict=True):
        if isinstance(result, McpFailure):
            raise McpListingFailed(
                f"Error retrieving tool list from MCP server: '{server.label}': {result.detail}",
                param="tools",
            )
        if isinstance(result, BaseException):
            raise result
        lists[server.label] = result
    listed: Listed = []
    items: list[Item] = []
    for server in servers:
        tools = [t for t in lists[server.label] if server.tools.admits(t.name, t.annotations)]
        if not tools and lists[server.label]:
            where = f"tools[{server.position}].allowed_tools"
            raise InvalidRequest(
                f"{where}: no tool of the MCP server '{server.label}' is allowed", param=where
            )
        listed.append((server, tools))
        if server in fresh:
            items.append(list_item(ids.next("mcpl"), server.label, tools))
    return items, listed
