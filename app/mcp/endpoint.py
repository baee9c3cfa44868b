"""`/mcp`: ToolRelay as one MCP server over every configured one (the SDK's lowlevel server,
stateless Streamable HTTP with JSON answers, both protocol revisions). `tools/list` answers
the allowed tools of every server the client key may use as `LABEL__TOOL`; `tools/call` runs
the tool on its own server and answers its result as it came. One log line and the metrics
per call; a server that is down never hides the others."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from app.errors import ProxyError
from app.mcp.types import McpFailure, McpResult, McpTool, ServerRef
from app.ops.keys import ClientKey
from app.ops.logs import FIELDS, FieldsLine
from app.request_record import RequestRecord
from app.state import ProxyState

SEPARATOR = "__"
_CALLER = "toolrelay.mcp_caller"
"""The ASGI scope key of the request's Caller, read back by the handlers."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as the HTTP route found it (app/api/mcp.py): the proxy, the client key
    it admitted, and the request's record (None outside the app's middleware)."""

    proxy: ProxyState
    key: ClientKey
    record: RequestRecord | None


logger = logging.getLogger("toolrelay.mcp")


class McpEndpoint:
    """The MCP server behind /mcp (the route is app/api/mcp.py); `running()` must wrap the
    app's lifespan (the SDK's session manager runs each stateless request in its task
    group)."""

    def __init__(self) -> None:
        server: Server[Any] = Server(
            "toolrelay",
            on_list_tools=_list_tools,
            on_call_tool=_call_tool,
            # No per-call tools/list to check Mcp-Param headers: it would list every server.
            get_tool_input_schema=lambda _name: None,
        )
        # The SDK's OpenTelemetry middleware opens a span per message on the global tracer
        # provider, which ToolRelay never sets (its tracing has a provider of its own,
        # app/ops/tracing.py): the span went nowhere and cost ~20 us of CPU a call. The SDK
        # documents dropping it from this list as the way to opt out.
        server.middleware = []
        self._manager = StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            json_response=True,
            # Clients reach the proxy by whatever name it is served under; the client key,
            # not the Host header, is what admits them.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group lives in a task of its own, so the app's lifespan
        may be entered and left from different tasks (as a test harness does) without
        leaving a cancel scope in a task it was not opened in."""
        stop = asyncio.Event()
        ready = asyncio.Event()

        async def serve() -> None:
            async with self._manager.run():
                ready.set()
                await stop.wait()

        task = asyncio.ensure_future(serve())
        waiting = asyncio.ensure_future(ready.wait())
        await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()  # it failed to start: raise its error here
        try:
            yield
        finally:
            stop.set()
            await task

    async def handle(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        """Answers one HTTP request to /mcp for an admitted caller."""
        scope[_CALLER] = caller
        await self._manager.handle_request(scope, receive, send)


def _caller(ctx: Any) -> Caller:
    caller: Caller = ctx.request.scope[_CALLER]
    return caller


async def _list_tools(
    ctx: Any, _params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    caller = _caller(ctx)
    proxy, key = caller.proxy, caller.key
    labels = [label for label in proxy.mcp.labels if key.may_use_server(label)]
    listings = await asyncio.gather(*(_listing(proxy, key, label) for label in labels))
    return types.ListToolsResult(
        tools=[
            _outer_tool(label, tool)
            for label, tools in zip(labels, listings, strict=True)
            for tool in tools
        ]
    )


async def _listing(proxy: ProxyState, key: ClientKey, label: str) -> list[McpTool]:
    """One server's allowed tools; none (and an `mcp_error` line) when it cannot be listed."""
    try:
        return await proxy.mcp.list_tools(ServerRef(label))
    except McpFailure as failure:
        _log(
            "mcp_error",
            logging.WARNING,
            key=key.name,
            server=label,
            operation="tools/list",
            error=failure.message,
        )
        return []


def _outer_tool(label: str, tool: McpTool) -> types.Tool:
    annotations = None
    if tool.annotations is not None:
        annotations = types.ToolAnnotations.model_validate(tool.annotations)
    return types.Tool(
        name=f"{label}{SEPARATOR}{tool.name}",
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=annotations,
    )


async def _charge(
    proxy: ProxyState, record: RequestRecord | None, server: ServerRef
) -> float | None:
    """A priced server's `cost_per_call`, reserved against the key's and team's budgets before
    the call (raises BudgetExceeded) and counted as the request's cost once it is made."""
    cost = proxy.mcp.cost_per_call(server)
    if cost is None or record is None:
        return None
    if proxy.spend is not None:
        await proxy.spend.reserve_usd(record, cost)
    return cost


def _offered(caller: Caller, label: str, name: str) -> bool:
    """Whether `/mcp` offers this key the tool `name` of the server `label`."""
    mcp = caller.proxy.mcp
    if not mcp.configured(label) or not caller.key.may_use_server(label):
        return False
    allowed = mcp.allowed_tools(label)
    return allowed is None or name in allowed


async def _run_call(
    caller: Caller, label: str, name: str, arguments: dict[str, Any]
) -> tuple[McpResult, MCPError | None]:
    """The call's result; with it, the JSON-RPC error to answer instead when the server
    answered one (a transport failure or a refused budget stays a result with `isError`)."""
    proxy = caller.proxy
    try:
        cost = await _charge(proxy, caller.record, ServerRef(label))
        result = await proxy.mcp.call_tool(ServerRef(label), name, arguments)
    except McpFailure as failure:
        failed = McpResult([{"type": "text", "text": failure.message}], None, is_error=True)
        if failure.kind == "protocol" and failure.code is not None:
            return failed, MCPError(failure.code, failure.message)
        return failed, None
    except ProxyError as refusal:  # a budget that cannot hold the call: it is not made
        return McpResult([{"type": "text", "text": refusal.message}], None, is_error=True), None
    if cost is not None and caller.record is not None:
        caller.record.add_cost(cost)
    return result, None


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """A tool ToolRelay does not offer this key (an unknown label, a server outside the key's
    list, a tool `allowed_tools` leaves out) is JSON-RPC error -32602, the MCP spec's answer
    to an unknown tool; a JSON-RPC error the server answered is relayed as one too. A server
    that cannot be reached is a result with `isError` naming the failure."""
    caller = _caller(ctx)
    label, separator, name = params.name.partition(SEPARATOR)
    if not separator or not _offered(caller, label, name):
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    started = time.perf_counter()
    result, protocol_error = await _run_call(caller, label, name, dict(params.arguments or {}))
    elapsed = time.perf_counter() - started
    caller.proxy.mcp_metrics.count(label, name, caller.key.name, not result.is_error, elapsed)
    outcome = "error" if result.is_error else "ok"
    _log(
        "mcp_call",
        logging.INFO,
        key=caller.key.name,
        server=label,
        tool=name,
        duration_ms=round(elapsed * 1000, 2),
        outcome=outcome,
    )
    if protocol_error is not None:
        raise protocol_error
    return types.CallToolResult.model_validate(
        {
            "content": result.content,
            "structuredContent": result.structured,
            "isError": result.is_error,
        }
    )


def _log(event: str, level: int, **values: Any) -> None:
    """One line with the event's fields (never a call's arguments or results): a server that
    is down at WARNING (it needs a look), a call at INFO."""
    if logger.isEnabledFor(level):
        fields = {"event": event, **values}
        logger.log(level, "%s", FieldsLine(fields), extra={FIELDS: fields})
