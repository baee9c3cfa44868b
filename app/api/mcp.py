"""`/mcp`'s HTTP door: the client key checked as on /v1/ and put on the request's record, then
the MCP server over every configured one (app/mcp/endpoint.py) answers."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.auth import request_key
from app.api.middleware import RECORD_KEY
from app.mcp.endpoint import Caller, McpEndpoint
from app.state import ProxyState

PATH = "/mcp"


class McpRoute:
    """The ASGI app at /mcp."""

    def __init__(self, endpoint: McpEndpoint) -> None:
        self._endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The same client key as /v1/, a config one or one made at run time
        (AuthenticationFailed is the middleware's 401)."""
        proxy: ProxyState = scope["app"].state.proxy
        key = await request_key(proxy, dict(scope["headers"]))
        record = scope.get(RECORD_KEY)
        if record is not None:
            record.key = key
        await self._endpoint.handle(scope, receive, send, Caller(proxy, key, record))
