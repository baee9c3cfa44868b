"""Real MCP servers for the tests, built with the mcp SDK's own server: tools `add(a, b)`
(structuredContent), `echo(text)`, `fail()` (raises: a result with isError), `slow(seconds)`,
`pid()` (the serving process, so a test can kill a stdio server) and `header(name)` (a
request header as the server received it). Served as stateless Streamable HTTP, as a
legacy-handshake (stateful) server that does not know the 2026-07-28 revision, both on
127.0.0.1 in a thread, or over stdio: `python -m tests.helpers.mcp_servers stdio`."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send


def build_server(name: str = "tests") -> MCPServer:
    server = MCPServer(name)

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Say the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails.")
    def fail() -> str:
        raise ValueError("the tool failed on purpose")

    @server.tool(description="Sleep, then answer.")
    async def slow(seconds: float = 2.0) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @server.tool(description="The serving process's id.")
    def pid() -> int:
        return os.getpid()

    @server.tool(description="A request header as received ('' when absent).")
    def header(name: str, ctx: Context) -> str:
        headers = ctx.headers or {}
        return str(headers.get(name.lower(), ""))

    return server


class LegacyOnly:
    """An MCP server that has not moved to 2026-07-28: a request in that revision (its
    `mcp-protocol-version` header) gets what older servers answer a method they do not know
    before the handshake, so a client must fall back to `initialize`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            version = dict(scope["headers"]).get(b"mcp-protocol-version")
            if version is not None and version.decode() not in HANDSHAKE_PROTOCOL_VERSIONS:
                body = (
                    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,'
                    b'"message":"Bad Request: No valid session ID provided"}}'
                )
                headers = [(b"content-type", b"application/json")]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class Rejecting:
    """Answers every request with `status` (a server behind an auth gateway)."""

    def __init__(self, status: int) -> None:
        self.status = status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            assert message["type"] == "lifespan.shutdown"
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b'{"error":"unauthorized"}'
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class Gate:
    """`app` behind a switch a test turns: every request is answered `status` while it is set
    (a server that starts answering 401), and one whose body holds `deny` is answered 401
    (one operation refused among concurrent ones). Every answer sets a cookie (a client must
    not send it back); `inflight` counts the requests being served."""

    def __init__(self, app: ASGIApp, deny: bytes = b"deny-me") -> None:
        self.app = app
        self.deny = deny
        self.status: int | None = None
        self.inflight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        messages = [await receive()]
        while messages[-1].get("more_body", False):
            messages.append(await receive())
        body = b"".join(message.get("body", b"") for message in messages)
        status = self.status if self.status is not None else 401 if self.deny in body else None
        if status is not None:
            headers = [(b"content-type", b"application/json"), (b"set-cookie", b"gate=1")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b'{"error":"refused"}'})
            return

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        async def with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", b"gate=1")]
            await send(message)

        self.inflight += 1
        try:
            await self.app(scope, replay, with_cookie)
        finally:
            self.inflight -= 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_app(mode: str = "stateless") -> Any:
    """`stateless` (2026-07-28 and the handshake), `legacy` (the handshake only, stateful)."""
    server = build_server(f"tests-{mode}")
    if mode == "stateless":
        return server.streamable_http_app(stateless_http=True, json_response=True)
    if mode == "legacy":
        return LegacyOnly(server.streamable_http_app(stateless_http=False, json_response=False))
    raise ValueError(mode)


@contextmanager
def serve(app: Any, port: int | None = None) -> Iterator[str]:
    """`app` on 127.0.0.1 in a thread until the block ends; yields its /mcp URL."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def stdio_command() -> list[str]:
    return [sys.executable, "-m", "tests.helpers.mcp_servers", "stdio"]


if __name__ == "__main__":
    if sys.argv[1:] == ["stdio"]:
        build_server("tests-stdio").run("stdio")
    else:
        sys.exit("usage: python -m tests.helpers.mcp_servers stdio")


def mismatched_app() -> Any:
    """A stateless server, built on the SDK's lowlevel Server, whose `add` declares an
    `outputSchema` its own structuredContent breaks (`result` a string; it answers 5): a proxy
    relays a result as the server gave it, and leaves judging it to the end client."""
    from contextlib import asynccontextmanager

    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    declared = {"type": "object", "properties": {"result": {"type": "string"}}}

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        tool = {"name": "add", "inputSchema": {"type": "object"}, "outputSchema": declared}
        return types.ListToolsResult.model_validate({"tools": [tool]})

    async def call_tool(_ctx: Any, _params: Any) -> types.CallToolResult:
        content = [{"type": "text", "text": "5"}]
        return types.CallToolResult.model_validate(
            {"content": content, "structuredContent": {"result": 5}, "isError": False}
        )

    server: Any = Server("mismatched", on_list_tools=list_tools, on_call_tool=call_tool)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, security_settings=security
    )

    class Endpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", Endpoint(), methods=["POST"])], lifespan=lifespan)
