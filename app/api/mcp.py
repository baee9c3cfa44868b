"""`/mcp`'s HTTP door: the client key checked as on /v1/ and put on the request's record, then
the MCP server over every configured one (app/mcp/endpoint.py) answers."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.auth import client_key
from app.api.middleware import RECORD_KEY
from app.mcp.endpoint import Caller, McpEndpoint
from app.ops.keys import ANONYMOUS
from app.state import ProxyState

PATH = "/mcp"


class McpRoute:
    """The ASGI app at /mcp."""

    def __init__(self, endpoint: McpEndpoint) -> None:
        self._endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The same client key as /v1/ (AuthenticationFailed is the middleware's 401)."""
        proxy: ProxyState = scope["app"].state.proxy
        key = ANONYMOUS
        if proxy.ops.keys.required:
            headers = dict(scope["headers"])
            key = client_key(
                proxy.ops.keys, headers.get(b"authorization"), headers.get(b"x-api-key")
            )
        record = scope.get(RECORD_KEY)
        if record is not None:
            record.key = key
        await self._endpoint.handle(scope, receive, send, Caller(proxy, key, record))
