"""McpServers: the configured MCP servers as the rest of the proxy uses them (the hosted-tool
loop and /mcp): who is configured, their allow-lists and approval defaults, which client-given
URLs are allowed, and `list_tools` / `call_tool` on any of them, each bounded in time and
failing only with McpFailure."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from app.mcp.settings import McpConfig, McpServerConfig
from app.mcp.types import McpFailure, McpResult, McpTool, ServerRef

if TYPE_CHECKING:
    from mcp import Client, StdioServerParameters

    from app.mcp.http import HttpConnector, StatusRecord
    from app.mcp.stdio import StdioProcess

# The mcp SDK (and aiohttp's client for it) is imported where a server is first used, never
# here: every proxy builds McpServers, and one without MCP servers must not pay the SDK's
# ~65 MB and second of import (DESIGN.md, "imports"; issue 40).

_INVALID_PARAMS = -32602
"""JSON-RPC's invalid-params code (mcp_types.INVALID_PARAMS), without importing the SDK."""

DEFAULT_TIMEOUT = 30.0
"""Seconds one operation (connect included) may take: a hung server fails the call, it
cannot hang the request."""

_T = TypeVar("_T")

logger = logging.getLogger("toolrelay.mcp")


class McpServers:
    """One per proxy (`ProxyState.mcp`); `aclose` stops the stdio processes and the pool."""

    def __init__(self, config: McpConfig, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._config = config
        self._timeout = timeout
        self.max_rounds = config.max_rounds
        self._connector: HttpConnector | None = None
        self._processes = _stdio_processes(config, timeout)
        self._secrets = sorted(set(config.secrets()), key=len, reverse=True)
        for line in startup_warnings(config):
            logger.warning("%s", line)

    @property
    def _http(self) -> HttpConnector:
        """The HTTP servers' pool, made (and the SDK imported) on first use."""
        if self._connector is None:
            from app.mcp.http import HttpConnector  # noqa: PLC0415

            self._connector = HttpConnector(self._timeout)
        return self._connector

    @property
    def labels(self) -> list[str]:
        return list(self._config.servers)

    def configured(self, label: str) -> bool:
        return label in self._config.servers

    def require_approval(self, label: str) -> Any:
        """The configured default (a string or a filter as a dict), None when not given."""
        server = self._config.servers.get(label)
        if server is None or server.require_approval is None:
            return None
        approval = server.require_approval
        return approval if isinstance(approval, str) else approval.model_dump(exclude_none=True)

    def allowed_tools(self, label: str) -> list[str] | None:
        server = self._config.servers.get(label)
        return None if server is None or server.allowed_tools is None else server.allowed_tools

    def cost_per_call(self, server: ServerRef) -> float | None:
        """USD a call to a configured server costs (None: not priced; a client-given URL is
        never the configured server)."""
        configured = self._config.servers.get(server.label) if server.url is None else None
        return None if configured is None else configured.cost_per_call

    def remote_url_allowed(self, url: str) -> bool:
        return any(fnmatch.fnmatchcase(url, pattern) for pattern in self._config.remote_urls)

    def process(self, label: str) -> StdioProcess | None:
        """A stdio server's process holder (tests watch it die and come back)."""
        return self._processes.get(label)

    async def list_tools(self, server: ServerRef) -> list[McpTool]:
        """The server's tools; a configured server's `allowed_tools` applied."""
        from app.mcp import session  # noqa: PLC0415

        tools = await self._run(server, session.list_all)
        allowed = None if server.url is not None else self.allowed_tools(server.label)
        return tools if allowed is None else [tool for tool in tools if tool.name in allowed]

    async def call_tool(self, server: ServerRef, name: str, arguments: dict[str, Any]) -> McpResult:
        allowed = None if server.url is not None else self.allowed_tools(server.label)
        if allowed is not None and name not in allowed:
            detail = f"the tool '{name}' is not allowed"
            message = f"MCP server '{server.label}': {detail}"
            raise McpFailure("protocol", _INVALID_PARAMS, message, detail)
        from app.mcp import session  # noqa: PLC0415

        async def run(client: Client) -> McpResult:
            return await session.call(client, name, arguments)

        return await self._run(server, run)

    async def aclose(self) -> None:
        for process in self._processes.values():
            await process.aclose()
        if self._connector is not None:
            await self._connector.aclose()

    async def _run(self, server: ServerRef, operation: Callable[[Client], Awaitable[_T]]) -> _T:
        """`operation` on a connected client within the timeout; every failure an McpFailure
        with the configured secrets (and the request's headers) taken out of its message."""
        from mcp.shared.exceptions import MCPError  # noqa: PLC0415

        from app.mcp import session  # noqa: PLC0415
        from app.mcp.http import StatusRecord  # noqa: PLC0415

        record = StatusRecord()
        try:
            async with asyncio.timeout(self._timeout), self._connect(server, record) as client:
                return await operation(client)
        except McpFailure:
            raise
        except Exception as error:
            process = self._processes.get(server.label) if server.url is None else None
            if process is not None and not isinstance(error, MCPError):
                process.discard()
            command = None if process is None else process.command
            failure = session.failure(server.label, error, record.status, self._timeout, command)
            message = self._redact(failure.message, server)
            detail = self._redact(failure.detail, server)
            raise McpFailure(failure.kind, failure.code, message, detail) from None

    @asynccontextmanager
    async def _connect(self, server: ServerRef, record: StatusRecord) -> AsyncIterator[Client]:
        if server.url is not None:
            async with self._http.connect(server.url, dict(server.headers), record) as client:
                yield client
            return
        config = self._config.servers.get(server.label)
        if config is None:
            message = f"no MCP server '{server.label}' is configured"
            raise McpFailure("http", None, message, "it is not configured")
        process = self._processes.get(server.label)
        if process is not None:
            yield await process.client()
            return
        assert config.url is not None
        headers = _merged(config, server)
        async with self._http.connect(config.url, headers, record) as client:
            yield client

    def _redact(self, message: str, server: ServerRef) -> str:
        for secret in [*self._secrets, *(value for value in server.headers.values() if value)]:
            message = message.replace(secret, "***")
        return message


def _merged(config: McpServerConfig, server: ServerRef) -> dict[str, str]:
    """The configured headers, and the request's where the config has none of that name."""
    headers = dict(config.headers)
    taken = {name.lower() for name in headers}
    headers.update(
        (name, value) for name, value in server.headers.items() if name.lower() not in taken
    )
    return headers


def startup_warnings(config: McpConfig) -> list[str]:
    """What will fail when a server is first used, said once at start-up (the proxy still
    starts): a stdio command not found on PATH, a header whose `${VAR}` left it empty (a
    value is never said: it may be a secret)."""
    lines = []
    for label, server in config.servers.items():
        if server.command is not None:
            program = server.command[0]
            if shutil.which(program, path=server.env.get("PATH")) is None:
                lines.append(
                    f"MCP server '{label}': its command '{program}' is not found on PATH; "
                    "calls to it will fail until it is installed"
                )
        empty = [name for name, value in server.headers.items() if _looks_empty(value)]
        if empty:
            lines.append(
                f"MCP server '{label}': the header(s) {', '.join(empty)} are empty or end in "
                "a blank (is the environment variable in their ${...} set?)"
            )
    return lines


def _looks_empty(value: str) -> bool:
    """An empty value, or one a `${VAR}` left ending in a blank (`Bearer `): HTTP trims a
    value's trailing blanks, so one there is always a part left out."""
    return not value.strip() or value != value.rstrip()


def _stdio_processes(config: McpConfig, timeout: float) -> dict[str, StdioProcess]:
    """A holder per stdio server (none started yet); the SDK imported only if there is one."""
    commands = {label: s for label, s in config.servers.items() if s.command is not None}
    if not commands:
        return {}
    from app.mcp.stdio import StdioProcess  # noqa: PLC0415

    return {label: StdioProcess(_stdio_params(s), timeout) for label, s in commands.items()}


def _stdio_params(server: McpServerConfig) -> StdioServerParameters:
    from mcp import StdioServerParameters  # noqa: PLC0415

    assert server.command is not None
    return StdioServerParameters(
        command=server.command[0], args=server.command[1:], env=dict(server.env) or None
    )
