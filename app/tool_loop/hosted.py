"""A request's hosted `mcp` tools -> the servers the loop will use (CONTRACT.md, "MCP"):
a configured server by its label (its headers, the request's added), or a client's
`server_url` only where `mcp.remote_urls` allows it, so a client cannot make the proxy call
an address the config did not name; a server outside the key's `mcp` list is refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import InvalidRequest, ProxyError
from app.mcp.registry import McpServers
from app.mcp.types import ServerRef

MCP = "mcp"


class McpServerNotAllowed(ProxyError):
    status = 403
    type = "permission_error"
    code = "mcp_server_not_allowed"


class McpListingFailed(ProxyError):
    """A server could not be listed: OpenAI's 424, before any model call."""

    status = 424
    type = "external_connector_error"
    code = "http_error"


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """`allowed_tools`: names (None: any), and `read_only` (only tools annotated so)."""

    names: frozenset[str] | None = None
    read_only: bool = False

    def admits(self, name: str, annotations: dict[str, Any] | None) -> bool:
        if self.names is not None and name not in self.names:
            return False
        return not self.read_only or bool((annotations or {}).get("readOnlyHint"))


@dataclass(frozen=True, slots=True)
class HostedServer:
    """One `mcp` tool of the request: where it is in `tools`, its server, its filter, and its
    approval policy (the request's, else the configured server's, else "always")."""

    position: int
    server: ServerRef
    tools: ToolFilter
    approval: Any

    @property
    def label(self) -> str:
        return self.server.label

    def needs_approval(self, name: str, annotations: dict[str, Any] | None) -> bool:
        """`never` wins where a tool matches it; every other tool asks first, as on OpenAI."""
        policy = self.approval
        if policy == "never":
            return False
        never = policy.get("never") if isinstance(policy, dict) else None
        return not _matches(never, name, annotations)


def _matches(group: Any, name: str, annotations: dict[str, Any] | None) -> bool:
    """A `{tool_names, read_only}` group: the tool is named in it, or read-only when it asks
    for read-only tools."""
    if not isinstance(group, dict):
        return False
    if name in _names(group):
        return True
    return group.get("read_only") is True and bool((annotations or {}).get("readOnlyHint"))


def _names(group: Any) -> list[str]:
    names = group.get("tool_names") if isinstance(group, dict) else None
    return [name for name in names if isinstance(name, str)] if isinstance(names, list) else []


def has_mcp_tools(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and tool.get("type") == MCP for tool in tools
    )


def hosted_servers(body: dict[str, Any], mcp: McpServers, key: Any) -> list[HostedServer]:
    """Every `mcp` tool checked and resolved; InvalidRequest / McpServerNotAllowed name the
    tool at fault."""
    servers: list[HostedServer] = []
    for position, tool in enumerate(body["tools"]):
        if isinstance(tool, dict) and tool.get("type") == MCP:
            server = _hosted(tool, f"tools[{position}]", position, mcp, key)
            if any(known.label == server.label for known in servers):
                raise InvalidRequest(
                    f"tools[{position}].server_label: '{server.label}' is named twice",
                    param=f"tools[{position}].server_label",
                )
            servers.append(server)
    return servers


def _hosted(tool: dict[str, Any], where: str, position: int, mcp: McpServers, key: Any) -> Any:
    label = tool.get("server_label")
    if not isinstance(label, str) or not label:
        raise InvalidRequest(f"{where}.server_label: Field required", param=f"{where}.server_label")
    if tool.get("connector_id") is not None:
        raise InvalidRequest(
            f"{where}.connector_id: OpenAI's connectors run only on OpenAI's side; name a "
            "configured server_label instead",
            param=f"{where}.connector_id",
        )
    url = _server_url(tool, where, mcp)
    if url is None and not mcp.configured(label):
        raise InvalidRequest(
            f"{where}.server_label: no MCP server '{label}' is configured",
            param=f"{where}.server_label",
        )
    if url is None and not key.may_use_server(label):
        raise McpServerNotAllowed(f"This key may not use the MCP server '{label}'.", param=where)
    server = ServerRef(label, url, _headers(tool, where))
    approval = tool.get("require_approval")
    if approval is None:
        approval = (mcp.require_approval(label) if url is None else None) or "always"
    _check_approval(approval, f"{where}.require_approval")
    return HostedServer(position, server, _filter(tool.get("allowed_tools"), where), approval)


def _server_url(tool: dict[str, Any], where: str, mcp: McpServers) -> str | None:
    url = tool.get("server_url")
    if url is None:
        return None
    if not isinstance(url, str) or not url:
        raise InvalidRequest(
            f"{where}.server_url: Input should be a valid string", param=f"{where}.server_url"
        )
    if not mcp.remote_url_allowed(url):
        raise InvalidRequest(
            f"{where}.server_url: this server_url is not allowed here (mcp.remote_urls); name "
            "a configured server_label instead",
            param=f"{where}.server_url",
        )
    return url


def _headers(tool: dict[str, Any], where: str) -> dict[str, str]:
    headers = tool.get("headers") or {}
    if not isinstance(headers, dict) or not all(
        isinstance(name, str) and isinstance(value, str) for name, value in headers.items()
    ):
        raise InvalidRequest(
            f"{where}.headers: Input should be an object of strings", param=f"{where}.headers"
        )
    added = dict(headers)
    authorization = tool.get("authorization")
    if authorization is not None:
        if not isinstance(authorization, str) or not authorization:
            raise InvalidRequest(
                f"{where}.authorization: Input should be a valid string",
                param=f"{where}.authorization",
            )
        added["Authorization"] = f"Bearer {authorization}"
    return added


def _filter(given: Any, where: str) -> ToolFilter:
    if given is None:
        return ToolFilter()
    if isinstance(given, list) and all(isinstance(name, str) for name in given):
        return ToolFilter(frozenset(given))
    if isinstance(given, dict) and set(given) <= {"tool_names", "read_only"}:
        names, read_only = given.get("tool_names"), given.get("read_only", False)
        names_ok = names is None or (
            isinstance(names, list) and all(isinstance(name, str) for name in names)
        )
        if names_ok and isinstance(read_only, bool | None):
            return ToolFilter(frozenset(names) if names is not None else None, bool(read_only))
    raise InvalidRequest(
        f"{where}.allowed_tools: Input should be a list of tool names or {{tool_names, read_only}}",
        param=f"{where}.allowed_tools",
    )


def _approval_group(group: Any) -> bool:
    """`{tool_names?, read_only?}` as OpenAI's spec types them (a null `tool_names` would be
    echoed into a Response the spec rejects: the hosted MCP fuzz found it)."""
    if not isinstance(group, dict) or not set(group) <= {"tool_names", "read_only"}:
        return False
    names = group.get("tool_names", [])
    names_ok = isinstance(names, list) and all(isinstance(name, str) for name in names)
    return names_ok and isinstance(group.get("read_only", False), bool)


def _check_approval(approval: Any, where: str) -> None:
    if approval in ("always", "never"):
        return
    groups = approval.values() if isinstance(approval, dict) else ()
    if groups and set(approval) <= {"always", "never"} and all(map(_approval_group, groups)):
        return
    raise InvalidRequest(
        f"{where}: Input should be 'always', 'never' or {{always: {{tool_names}}, never: "
        "{tool_names}}",
        param=where,
    )
