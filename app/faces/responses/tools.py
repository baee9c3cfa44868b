"""Responses tools and tool_choice -> chat functions, and the names that map calls back.

Chat knows only functions, so a `custom` tool becomes a function with one required string
parameter `input`, and a `namespace` is flattened to functions named `NAMESPACE__NAME`
(CONTRACT.md, "OpenAI Responses API"); a flattened name no kind takes (Codex's
`mcp__<server>__` namespaces easily pass 64 characters) is made one by function_name.
`ToolNames` remembers each upstream name's origin so an answer's calls go back to the client
as the item type and name it offered. Hosted tools run
only on OpenAI's side: they are left out, and named in a warning."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from app.errors import InvalidRequest
from app.openai_types import REQUIRED_WITHOUT_TOOLS

NAMESPACE_SEPARATOR = "__"
CUSTOM_PARAMETERS = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's whole input."}},
    "required": ["input"],
    "additionalProperties": False,
}
EMPTY_PARAMETERS = {"type": "object", "properties": {}}
FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""A function name every kind takes: OpenAI's and Anthropic's `^[a-zA-Z0-9_-]{1,64}$`, and a
first character Gemini accepts."""
MAX_NAME = 64
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class ToolOrigin:
    """What the client offered under one upstream function name."""

    kind: str  # "function" | "custom"
    name: str
    namespace: str | None = None


@dataclass(slots=True)
class ToolNames:
    """Upstream function name -> the client's tool; and the hosted tools left out."""

    origins: dict[str, ToolOrigin] = field(default_factory=dict)
    hosted: list[str] = field(default_factory=list)

    def origin(self, upstream_name: str) -> ToolOrigin:
        return self.origins.get(upstream_name) or ToolOrigin("function", upstream_name)


def upstream_name(name: str, namespace: str | None) -> str:
    """The function a client tool is offered as, and its calls replayed under: a namespace's
    `NAMESPACE__NAME` made a name every kind takes, a plain name as it came unless too long
    (its other faults are the client's to hear about)."""
    if namespace:
        return function_name(joined_name(name, namespace))
    return name if len(name) <= MAX_NAME else function_name(name)


def joined_name(name: str, namespace: str) -> str:
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}"


def function_name(flat: str) -> str:
    """`flat` made a function name every kind takes: other characters become `_`, a name that
    must start with a letter or `_` gets one, and a long one is cut to 64 with a digest of the
    whole, so two long names stay apart. The same name every time, so a conversation's calls
    are replayed under the name they were offered under."""
    if FUNCTION_NAME.fullmatch(flat):
        return flat
    safe = _NOT_IN_NAMES.sub("_", flat)
    if not FUNCTION_NAME.match(safe):
        safe = f"_{safe}"
    if len(safe) > MAX_NAME:
        digest = hashlib.sha256(flat.encode()).hexdigest()[:8]
        safe = f"{safe[: MAX_NAME - len(digest) - 1]}_{digest}"
    return safe


def chat_tools(
    tools: Any, names: ToolNames, offered: list[tuple[list[Any], str]] | None = None
) -> list[dict[str, Any]]:
    """`tools`, then each `additional_tools` item's (`offered`: its tools and where they
    were). A name offered again is offered once, as last defined."""
    if tools is not None and not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list", param="tools")
    chat: list[dict[str, Any]] = []
    for position, tool in enumerate(tools or ()):
        chat += _chat_tool(tool, f"tools.{position}", names, None)
    if not offered:
        return chat
    for given, where in offered:
        for position, tool in enumerate(given):
            chat += _chat_tool(tool, f"{where}.{position}", names, None)
    return list({tool["function"]["name"]: tool for tool in chat}.values())


def _chat_tool(
    tool: Any, where: str, names: ToolNames, namespace: str | None
) -> list[dict[str, Any]]:
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        raise InvalidRequest(f"{where}.type: Field required", param=where)
    kind = tool["type"]
    if kind == "namespace" and namespace is None:
        inner = tool.get("tools")
        space = _name(tool, where)
        if not isinstance(inner, list):
            raise InvalidRequest(f"{where}.tools: Input should be a valid list", param=where)
        return [
            converted
            for i, member in enumerate(inner)
            for converted in _chat_tool(member, f"{where}.tools.{i}", names, space)
        ]
    if kind not in ("function", "custom"):
        names.hosted.append(kind)
        return []
    name = _name(tool, where)
    flat = upstream_name(name, namespace)
    names.origins[flat] = ToolOrigin(kind, name, namespace)
    function: dict[str, Any] = {"name": flat}
    description = tool.get("description")
    if kind == "custom":
        function["parameters"] = CUSTOM_PARAMETERS
        description = _custom_description(description, tool.get("format"))
    else:
        function["parameters"] = tool.get("parameters") or EMPTY_PARAMETERS
        if tool.get("strict") is not None:
            function["strict"] = tool["strict"]
    if description:
        function["description"] = description
    return [{"type": "function", "function": function}]


def _custom_description(description: Any, tool_format: Any) -> str:
    """A custom tool's grammar is part of what the model must follow: said in the
    description, since a function's string parameter cannot carry it."""
    text = description if isinstance(description, str) else ""
    if isinstance(tool_format, dict) and tool_format.get("type") == "grammar":
        syntax, definition = tool_format.get("syntax"), tool_format.get("definition")
        text += f"\n\nThe input must follow this {syntax} grammar:\n{definition}"
    return text.strip()


def _name(tool: dict[str, Any], where: str) -> str:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"{where}.name: Field required", param=f"{where}.name")
    return name


def chat_tool_choice(
    choice: Any, tools: list[dict[str, Any]], names: ToolNames
) -> tuple[Any, list[dict[str, Any]]]:
    """The chat tool_choice, and the tools to offer (`allowed_tools` narrows them)."""
    if choice is None or choice in ("auto", "none", "required"):
        if choice == "required" and not tools and not names.hosted:
            raise InvalidRequest(REQUIRED_WITHOUT_TOOLS, param="tool_choice")
        return choice, tools
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind in ("function", "custom"):
        name = upstream_name(str(choice.get("name")), choice.get("namespace"))
        if name not in names.origins:
            raise InvalidRequest(
                f"tool_choice: the tool '{name}' is not among the request's tools",
                param="tool_choice",
            )
        return {"type": "function", "function": {"name": name}}, tools
    if kind == "allowed_tools":
        return _allowed_tools(choice, tools)
    raise InvalidRequest(
        f"tool_choice: '{kind}' forces a hosted tool, which runs only on OpenAI's side",
        param="tool_choice",
    )


def _allowed_tools(
    choice: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    mode = choice.get("mode", "auto")
    allowed = choice.get("tools")
    if mode not in ("auto", "required") or not isinstance(allowed, list):
        raise InvalidRequest(
            "tool_choice: allowed_tools needs a mode ('auto' or 'required') and a list of tools",
            param="tool_choice",
        )
    wanted = {
        upstream_name(str(tool.get("name")), tool.get("namespace"))
        for tool in allowed
        if isinstance(tool, dict)
    }
    return mode, [tool for tool in tools if tool["function"]["name"] in wanted]
