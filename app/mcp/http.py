"""Streamable HTTP servers: one SDK `Client` per operation (auto mode: the 2026-07-28
`server/discover`, falling back to the handshake), over one pooled connection pool shared by
every call, with that call's own headers and a record of the HTTP error status the server
answered (the SDK folds a 401 into a generic JSON-RPC error)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


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


class HttpConnector:
    """Connects SDK clients to Streamable HTTP servers over one shared pool."""

    def __init__(self, timeout: float, pool: httpx2.AsyncBaseTransport | None = None) -> None:
        self._timeout = timeout
        self._pool = pool or httpx2.AsyncHTTPTransport(
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50)
        )
        self._shared = _SharedPool(self._pool)

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
        async with http_client:
            transport = streamable_http_client(url, http_client=http_client)
            async with Client(transport, mode="auto", cache=None) as client:
                record.status = None
                yield client

    async def aclose(self) -> None:
        await self._pool.aclose()
