"""The request's settings as a translated `Response` echoes them back (`tools`, `text`,
`reasoning`, `metadata`): in the shape OpenAI's published spec gives them there, which clients
generated from the spec enforce. The face carries hints it never checks and tolerates values
the upstream decides on, so echoing the client's body verbatim could return what no `Response`
may hold; each helper echoes what was applied, and leaves out or nulls what was not."""

from __future__ import annotations

from typing import Any

EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh", "max"})
SUMMARIES = frozenset({"auto", "concise", "detailed"})
VERBOSITIES = frozenset({"low", "medium", "high"})
GRAMMAR_SYNTAXES = frozenset({"lark", "regex"})
FORMATS = frozenset({"text", "json_object", "json_schema"})
DEFAULT_TEXT = {"format": {"type": "text"}}


def echoed_tools(tools: Any) -> list[dict[str, Any]]:
    """Function, custom and namespace tools, as the upstream was offered them, and `mcp` tools
    (ToolRelay runs them). Other hosted tools (web search...) are left out, as they are left
    out of the request (the answer's `x-toolrelay-warning` names them)."""
    if not isinstance(tools, list):
        return []
    echoed = [_tool(tool) for tool in tools]
    return [tool for tool in echoed if tool is not None]


def _tool(tool: Any) -> dict[str, Any] | None:
    kind = tool.get("type") if isinstance(tool, dict) else None
    if kind == "function":
        parameters, strict = tool.get("parameters"), tool.get("strict")
        return {
            **tool,
            "parameters": parameters if isinstance(parameters, dict) else None,
            "strict": strict if isinstance(strict, bool) else None,
        }
    if kind == "custom" and isinstance(tool.get("name"), str):
        custom = {"type": "custom", "name": tool["name"]}
        if isinstance(tool.get("description"), str):
            custom["description"] = tool["description"]
        if _custom_format(tool.get("format")):
            custom["format"] = tool["format"]
        return custom
    if kind == "mcp" and isinstance(tool.get("server_label"), str):
        return _mcp_tool(tool)
    if kind == "namespace" and isinstance(tool.get("name"), str) and tool["name"]:
        inner = [_tool(item) for item in tool.get("tools") or () if _offered_in_namespace(item)]
        members = [item for item in inner if item is not None]
        if not members:
            return None
        description = tool.get("description")
        return {
            "type": "namespace",
            "name": tool["name"],
            "description": description if isinstance(description, str) else "",
            "tools": members,
        }
    return None


def _mcp_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A hosted `mcp` tool ToolRelay ran: as OpenAI echoes it, `headers` null and no
    `authorization` (they reach the MCP server and nothing else)."""
    echoed: dict[str, Any] = {"type": "mcp", "server_label": tool["server_label"]}
    for name in ("server_url", "server_description"):
        if isinstance(tool.get(name), str):
            echoed[name] = tool[name]
    echoed["allowed_tools"] = tool.get("allowed_tools")
    echoed["require_approval"] = tool.get("require_approval", "always")
    echoed["headers"] = None
    return echoed


def _offered_in_namespace(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") in ("function", "custom")


def _custom_format(given: Any) -> bool:
    if not isinstance(given, dict):
        return False
    if given.get("type") == "text":
        return True
    return (
        given.get("type") == "grammar"
        and _known(given.get("syntax"), GRAMMAR_SYNTAXES)
        and isinstance(given.get("definition"), str)
    )


def echoed_text(text: Any) -> dict[str, Any]:
    """`text`: its format (the request already refused an unknown format type) and verbosity."""
    if not isinstance(text, dict):
        return DEFAULT_TEXT
    given = text.get("format")
    kind = given.get("type") if isinstance(given, dict) else None
    if not _known(kind, FORMATS):
        kind = "text"
    echoed: dict[str, Any] = {"format": {"type": kind}}
    if kind == "json_schema" and isinstance(given, dict):
        name, schema = given.get("name"), given.get("schema")
        echoed["format"] |= {
            "name": name if isinstance(name, str) else "",
            "schema": schema if isinstance(schema, dict) else {},
        }
        for key, wanted in (("strict", bool), ("description", str)):
            if isinstance(given.get(key), wanted):
                echoed["format"][key] = given[key]
    if _known(text.get("verbosity"), VERBOSITIES):
        echoed["verbosity"] = text["verbosity"]
    return echoed


def echoed_reasoning(reasoning: Any) -> dict[str, Any]:
    """`reasoning`: an effort and summary OpenAI knows, else null."""
    given = reasoning if isinstance(reasoning, dict) else {}
    effort, summary = given.get("effort"), given.get("summary")
    return {
        "effort": effort if _known(effort, EFFORTS) else None,
        "summary": summary if _known(summary, SUMMARIES) else None,
    }


def echoed_metadata(given: Any) -> dict[str, str]:
    """The client's metadata (a hint the upstream never sees) when it has the spec's shape
    (string values), else empty."""
    if isinstance(given, dict) and all(isinstance(value, str) for value in given.values()):
        return given
    return {}


def _known(value: Any, names: frozenset[str]) -> bool:
    """`value` is one of `names` (and hashable: a client may send any JSON)."""
    return isinstance(value, str) and value in names
