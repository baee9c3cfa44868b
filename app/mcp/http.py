"""Streamable HTTP servers: one SDK `Client` per operation, over one pooled connection pool
shared by every call, with that call's own headers and a record of the HTTP error status the
server answered (the SDK folds a 401 into a generic JSON-RPC error).

What a fresh client would learn again on every operation is remembered per server URL
(issue 31's budget, bench/mcp.py): the negotiated mode (the 2026-07-28 `server/discover`
result, or that the server only knows the handshake) and the tools' output schemas, their
compiled validators and `x-mcp-header` maps (the SDK lists the tools before validating a
call's structured result when its session has not listed them). Without it every
`tools/call` cost a discover, a `tools/list` and a schema compile besides the call. An
operation that fails forgets the URL, so the next one negotiates and lists afresh; so does
an entry older than KNOWN_TTL."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

KNOWN_TTL = 300.0
"""Seconds a server's negotiated mode and tool schemas are reused before negotiating again."""
KNOWN_MAX = 256
"""Server URLs remembered at most (client-given URLs are many): the oldest is forgotten."""
_TOOL_STATE = ("_tool_output_schemas", "_tool_output_validators", "_x_mcp_header_maps")
"""The SDK session's per-tool dicts (mcp 2.3) that a listing fills; absent ones are skipped."""


@dataclass(slots=True)
class StatusRecord:
    """The last HTTP status >= 400 seen on one operation's requests, None if none."""

    status: int | None = None

    async def observe(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.status = response.status_code


class _SharedPool(httpx2.AsyncBaseTransport):
    """The pool as each call's client sees it: closing that client leaves the pool open."""

    def __init__(self, pool: httpx2.AsyncBaseTransport) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        """The pool outlives every call; HttpConnector.aclose closes it."""


@dataclass(slots=True)
class _Known:
    """What one server URL negotiated ("legacy" or a 2026-07-28 version, with its discover
    result) and the tool state its sessions built, taken from the last good operation."""

    mode: str
    discover: mcp_types.DiscoverResult | None
    tools: dict[str, dict[str, Any]]
    expires: float


def _learned(session: ClientSession, expires: float) -> _Known | None:
    """What a session that has just completed an operation negotiated, None if unknown."""
    version = session.protocol_version
    discover = session.discover_result
    if discover is None and session.initialize_result is None:
        return None
    tools = {name: dict(getattr(session, name)) for name in _TOOL_STATE if hasattr(session, name)}
    mode = "legacy" if discover is None else str(version)
    return _Known(mode, discover, tools, expires)


def _seed(session: ClientSession, known: _Known) -> None:
    for name, state in known.tools.items():
        if isinstance(getattr(session, name, None), dict):
            setattr(session, name, dict(state))


class HttpConnector:
    """Connects SDK clients to Streamable HTTP servers over one shared pool."""

    def __init__(self, timeout: float, pool: httpx2.AsyncBaseTransport | None = None) -> None:
        self._timeout = timeout
        self._pool = pool or httpx2.AsyncHTTPTransport(
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50)
        )
        self._shared = _SharedPool(self._pool)
        self._known: OrderedDict[str, _Known] = OrderedDict()

    @asynccontextmanager
    async def connect(
        self, url: str, headers: Mapping[str, str], record: StatusRecord
    ) -> AsyncIterator[Client]:
        """A connected client; `record` keeps the HTTP error status of the connect, and is
        cleared once connected so it then only tells about the operation."""
        http_client = httpx2.AsyncClient(
            transport=self._shared,
            headers=dict(headers),
            timeout=httpx2.Timeout(self._timeout),
            event_hooks={"response": [record.observe]},
        )
        known = self._recall(url)
        async with http_client:
            transport = streamable_http_client(url, http_client=http_client)
            client = Client(
                transport,
                mode="auto" if known is None else known.mode,
                prior_discover=None if known is None else known.discover,
                cache=None,
            )
            try:
                async with client:
                    record.status = None
                    if known is not None:
                        _seed(client.session, known)
                    yield client
                    expires = time.monotonic() + KNOWN_TTL if known is None else known.expires
                    self._remember(url, _learned(client.session, expires))
            except BaseException:
                self._known.pop(url, None)
                raise

    def _recall(self, url: str) -> _Known | None:
        known = self._known.get(url)
        if known is not None and known.expires < time.monotonic():
            del self._known[url]
            return None
        return known

    def _remember(self, url: str, known: _Known | None) -> None:
        if known is None:
            return
        self._known[url] = known
        self._known.move_to_end(url)
        while len(self._known) > KNOWN_MAX:
            self._known.popitem(last=False)

    async def aclose(self) -> None:
        await self._pool.aclose()
