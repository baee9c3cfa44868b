"""`/mcp`'s HTTP door: the client key checked as on /v1/ and put on the request's record, then
the MCP server over every configured one (app/mcp/endpoint.py) answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from app.api.auth import request_key
from app.api.middleware import RECORD_KEY
from app.state import ProxyState

if TYPE_CHECKING:
    from app.mcp.endpoint import McpEndpoint

PATH = "/mcp"


class McpRoute:
    """The ASGI app at /mcp. Its MCP server is the SDK's, so it is built and started with the
    app only when MCP servers are configured; otherwise on the first request to /mcp (it then
    lists no tools), so a proxy without MCP never imports the SDK (DESIGN.md, "imports")."""

    def __init__(self) -> None:
        self._endpoint: McpEndpoint | None = None
        self._stack = AsyncExitStack()
        self._starting = asyncio.Lock()

    @asynccontextmanager
    async def running(self, *, eager: bool) -> AsyncIterator[None]:
        """Wraps the app's lifespan: the endpoint started now if `eager`, and stopped at the
        end whenever it was started."""
        self._stack = AsyncExitStack()
        self._starting = asyncio.Lock()
        try:
            if eager:
                await self._started()
            yield
        finally:
            self._endpoint = None
            await self._stack.aclose()

    async def _started(self) -> McpEndpoint:
        async with self._starting:
            if self._endpoint is None:
                from app.mcp.endpoint import McpEndpoint  # noqa: PLC0415

                endpoint = McpEndpoint()
                await self._stack.enter_async_context(endpoint.running())
                self._endpoint = endpoint
            return self._endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The same client key as /v1/, a config one or one made at run time
        (AuthenticationFailed is the middleware's 401)."""
        proxy: ProxyState = scope["app"].state.proxy
        key = await request_key(proxy, dict(scope["headers"]))
        record = scope.get(RECORD_KEY)
        if record is not None:
            record.key = key
        endpoint = self._endpoint or await self._started()
        from app.mcp.endpoint import Caller  # noqa: PLC0415  (loaded by _started)

        await endpoint.handle(scope, receive, send, Caller(proxy, key, record))
