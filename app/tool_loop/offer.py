"""Listed MCP tools -> the functions the model is offered, and the names that map its calls
back to (server, tool). A tool is offered as `LABEL__TOOL`, made a valid function name by
mcp_history.offered_name (the name a conversation's `mcp_call` items are replayed under;
tools.function_name, as a client's namespaced tools are); a name that would clash with one
of the client's functions gets a numbered suffix, mapped back all the same."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.faces.responses.mcp_history import offered_name
from app.faces.responses.tools import MAX_NAME
from app.mcp.types import McpTool
from app.tool_loop.hosted import HostedServer

EMPTY_OBJECT = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class OfferedTool:
    server: HostedServer
    tool: McpTool


@dataclass(slots=True)
class McpNames:
    """Upstream function name -> the server and tool it stands for."""

    offered: dict[str, OfferedTool] = field(default_factory=dict)

    def get(self, upstream: str) -> OfferedTool | None:
        return self.offered.get(upstream)


def offer(
    listed: list[tuple[HostedServer, list[McpTool]]], taken: set[str]
) -> tuple[list[dict[str, Any]], McpNames]:
    """The chat functions for every listed tool, in the servers' order; `taken`: the names
    the client's own functions already use."""
    names = McpNames()
    functions: list[dict[str, Any]] = []
    for server, tools in listed:
        for tool in tools:
            name = _free(offered_name(tool.name, server.label), taken)
            taken.add(name)
            names.offered[name] = OfferedTool(server, tool)
            function: dict[str, Any] = {"name": name, "parameters": _parameters(tool)}
            if tool.description:
                function["description"] = tool.description
            functions.append({"type": "function", "function": function})
    return functions, names


def _free(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    number = 2
    while _numbered(name, number) in taken:
        number += 1
    return _numbered(name, number)


def _numbered(name: str, number: int) -> str:
    """`name` with a number, still no longer than a function name may be."""
    suffix = f"_{number}"
    return f"{name[: MAX_NAME - len(suffix)]}{suffix}"


def _parameters(tool: McpTool) -> dict[str, Any]:
    schema = tool.input_schema
    return schema if isinstance(schema, dict) and schema.get("type") == "object" else EMPTY_OBJECT
