"""Streamable HTTP servers: SDK clients over one aiohttp pool shared by every call, each
operation with its own headers and a record of the HTTP error status the server answered
(the SDK folds a 401 into a generic JSON-RPC error).

Issue 31's budget (bench/RESULTS.md "MCP"): a fresh client per operation cost ~4 ms of CPU
a `tools/call` (discover, `tools/list`, schema compile, client and task groups). So per
server URL the connector remembers what the last good operation negotiated (the 2026-07-28
discover result, or handshake only) and the tools' per-tool state; a 2026-07-28 server gets
one client held open per URL and header set, a handshake-only one a client per operation
(its session is the server's state), probe skipped. A failed operation forgets the URL and
stops its held client, as does KNOWN_TTL: a server replaced at the same URL by one that no
longer speaks the remembered revision fails one operation before it is negotiated again."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import aiohttp
import httpx2
import mcp_types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

KNOWN_TTL = 300.0
"""Seconds a server's negotiated mode and tool schemas are reused before negotiating again."""
KNOWN_MAX = 256
"""Server URLs remembered at most (client-given URLs are many): the oldest is forgotten."""
HELD_MAX = 64
"""Connected clients kept (one per server URL and header set): the oldest is closed."""
_Key = tuple[str, tuple[tuple[str, str], ...]]
"""A held client's key: the server URL and the sorted headers."""
_URLS: dict[str, httpx2.URL] = {}
"""URL strings as httpx2 parsed them (_LeanClient)."""
_TOOL_STATE = ("_tool_output_schemas", "_tool_output_validators", "_x_mcp_header_maps")
"""The SDK session's per-tool dicts (mcp 2.3) that a listing fills; absent ones are skipped."""


@dataclass(slots=True)
class StatusRecord:
    """The last HTTP status >= 400 seen on one operation's requests, None if none."""

    status: int | None = None

    async def observe(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.status = response.status_code


_CURRENT: ContextVar[StatusRecord | None] = ContextVar("mcp_status_record", default=None)
"""The operation's record on a held client, whose requests many operations share: the SDK
sends each request in a task started in the caller's context, so its hook sees the caller's."""


async def _observe_current(response: httpx2.Response) -> None:
    record = _CURRENT.get()
    if record is not None:
        await record.observe(response)


_AIOHTTP_ERRORS: tuple[tuple[type[Exception], type[httpx2.TransportError]], ...] = (
    (aiohttp.ClientConnectorError, httpx2.ConnectError),
    (aiohttp.ServerTimeoutError, httpx2.ReadTimeout),
    (aiohttp.ClientPayloadError, httpx2.ReadError),
    (aiohttp.ServerDisconnectedError, httpx2.RemoteProtocolError),
    (aiohttp.ClientError, httpx2.NetworkError),
)
"""aiohttp's failures as the httpx2 ones the SDK and session.failure expect, in order."""


def _as_httpx2(error: Exception) -> Exception:
    for aiohttp_type, httpx2_type in _AIOHTTP_ERRORS:
        if isinstance(error, aiohttp_type):
            return httpx2_type(type(error).__name__)
    return error


class _AiohttpBody(httpx2.AsyncByteStream):
    """An aiohttp response's body as httpx2 reads it: each read as it came (SSE events are
    handed on as they arrive); closing it releases the connection."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except aiohttp.ClientError as error:
            raise _as_httpx2(error) from None

    async def aclose(self) -> None:
        self._response.release()


class AiohttpPool(httpx2.AsyncBaseTransport):
    """httpx2's transport interface over one aiohttp session: the SDK takes an httpx2 client,
    and httpx2's own stack (httpcore2 over anyio) cost ~0.45 ms of CPU a request here, several
    times aiohttp's (bench/mcp.py; the proxy's upstream client chose the same, issue 23)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._session is None:  # made in the running loop, on first use
            connector = aiohttp.TCPConnector(limit=200, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False
            )
        body = await request.aread()
        try:
            response = await self._session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=body or None,
                allow_redirects=False,
                timeout=self._timeout(request.extensions.get("timeout", {})),
            )
        except aiohttp.ClientError as error:
            raise _as_httpx2(error) from None
        if response.content_type == "application/json":
            return await self._whole(request, response)
        return httpx2.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_AiohttpBody(response),
            request=request,
        )

    @staticmethod
    async def _whole(request: httpx2.Request, response: aiohttp.ClientResponse) -> httpx2.Response:
        """A JSON answer read at once (the SDK reads it whole anyway), past httpx2's chain of
        async iterators for a streamed body."""
        try:
            body = await response.read()
        except aiohttp.ClientError as error:
            raise _as_httpx2(error) from None
        finally:
            response.release()
        return httpx2.Response(
            status_code=response.status, headers=response.raw_headers, content=body, request=request
        )

    def _timeout(self, timeout: Mapping[str, float | None]) -> aiohttp.ClientTimeout:
        key = (timeout.get("connect"), timeout.get("read"))
        cached = self._timeouts.get(key)
        if cached is None:
            if len(self._timeouts) > 64:
                self._timeouts.clear()
            cached = aiohttp.ClientTimeout(total=None, sock_connect=key[0], sock_read=key[1])
            self._timeouts[key] = cached
        return cached

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _SharedPool(httpx2.AsyncBaseTransport):
    """The pool as each call's client sees it: closing that client leaves the pool open."""

    def __init__(self, pool: httpx2.AsyncBaseTransport) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        """The pool outlives every call; HttpConnector.aclose closes it."""


class _LeanClient(httpx2.AsyncClient):
    """httpx2's client parsing a URL string once: the SDK gives its endpoint as a string on
    every POST, and an httpx2.URL is immutable (no client here has a base URL)."""

    def _merge_url(self, url: httpx2.URL | str) -> httpx2.URL:
        parsed = _URLS.get(url) if isinstance(url, str) else None
        if parsed is None:
            parsed = super()._merge_url(url)
            if isinstance(url, str):
                if len(_URLS) >= KNOWN_MAX:
                    _URLS.clear()
                _URLS[url] = parsed
        return parsed


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


class _Held:
    """One connected client to a 2026-07-28 server, kept entered by a task of its own (an SDK
    client is entered and left in one task) and shared by every operation with its URL and
    headers: the protocol has no session, so nothing on the server ties it to a connection."""

    def __init__(self, known: _Known, expires: float) -> None:
        self.known = known
        self.expires = expires
        self.ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.users = 0
        """Operations running on it now: a retired client is stopped when the last ends."""
        self.retired = False

    def start(self, http_client: httpx2.AsyncClient, url: str) -> None:
        self.task = asyncio.create_task(self._hold(http_client, url))

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and time.monotonic() < self.expires

    async def _hold(self, http_client: httpx2.AsyncClient, url: str) -> None:
        try:
            async with http_client:
                transport = streamable_http_client(url, http_client=http_client)
                mode, discover = self.known.mode, self.known.discover
                async with Client(transport, mode=mode, prior_discover=discover, cache=None) as c:
                    _seed(c.session, self.known)
                    self.ready.set_result(c)
                    await self._stop.wait()
        except BaseException as error:
            if not self.ready.done():
                self.ready.set_exception(error if isinstance(error, Exception) else RuntimeError())
            if not isinstance(error, Exception):
                raise

    async def stop(self, timeout: float) -> None:
        self._stop.set()
        if self.task is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await self.task
        except (TimeoutError, Exception):
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


class HttpConnector:
    """Connects SDK clients to Streamable HTTP servers over one shared pool."""

    def __init__(self, timeout: float, pool: httpx2.AsyncBaseTransport | None = None) -> None:
        self._timeout = timeout
        self._pool = pool or AiohttpPool()
        self._shared = _SharedPool(self._pool)
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._held: OrderedDict[_Key, _Held] = OrderedDict()
        self._stopping: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def connect(
        self, url: str, headers: Mapping[str, str], record: StatusRecord
    ) -> AsyncIterator[Client]:
        """A connected client; `record` keeps the HTTP error status of the connect, and is
        cleared once connected so it then only tells about the operation. A server known to
        speak 2026-07-28 gets the held client for its URL and headers; any other, or one not
        yet known, a client of its own, which teaches the connector what it negotiated."""
        known = self._recall(url)
        if known is None or known.mode == "legacy":
            async with self._fresh(url, headers, record, known) as client:
                yield client
            return
        key = (url, tuple(sorted(headers.items())))
        held = self._hold(key, headers, known)
        token = _CURRENT.set(record)
        held.users += 1
        try:
            client = await asyncio.shield(held.ready)
            yield client
        except BaseException:
            self._known.pop(url, None)
            self._drop(key, held)
            raise
        finally:
            _CURRENT.reset(token)
            held.users -= 1
            if held.retired and held.users == 0:
                self._stop_later(held)

    def _hold(self, key: _Key, headers: Mapping[str, str], known: _Known) -> _Held:
        """The held client for `key`, started now if there is none alive (no wire traffic:
        the known discover result is adopted)."""
        held = self._held.get(key)
        if held is not None and held.alive:
            return held
        if held is not None:
            self._drop(key, held)
        held = _Held(known, known.expires)
        held.start(self._client(headers, _observe_current), key[0])
        self._held[key] = held
        while len(self._held) > HELD_MAX:
            self._drop(*next(iter(self._held.items())))
        return held

    def _drop(self, key: _Key, held: _Held, *, now: bool = False) -> None:
        """Forget a held client; it is stopped in the background once no operation runs on
        it (one operation's failure must not cut off the others sharing the client), or
        `now`, whatever runs on it."""
        if self._held.get(key) is held:
            del self._held[key]
        held.retired = True
        if now or held.users == 0:
            self._stop_later(held)

    def _stop_later(self, held: _Held) -> None:
        task = asyncio.create_task(held.stop(self._timeout))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def _client(self, headers: Mapping[str, str], hook: Any) -> httpx2.AsyncClient:
        """An httpx2 client that keeps no cookie: a held client serves many operations, none
        of which may carry what a server set for another (a client per operation never did)."""
        return _LeanClient(
            transport=self._shared,
            headers=dict(headers),
            timeout=httpx2.Timeout(self._timeout),
            event_hooks={"response": [hook]},
            cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
        )

    @asynccontextmanager
    async def _fresh(
        self, url: str, headers: Mapping[str, str], record: StatusRecord, known: _Known | None
    ) -> AsyncIterator[Client]:
        http_client = self._client(headers, record.observe)
        async with http_client:
            transport = streamable_http_client(url, http_client=http_client)
            mode, discover = ("auto", None) if known is None else (known.mode, known.discover)
            client = Client(transport, mode=mode, prior_discover=discover, cache=None)
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
        for key, held in list(self._held.items()):
            self._drop(key, held, now=True)
        for task in list(self._stopping):
            with contextlib.suppress(BaseException):
                await task
        await self._pool.aclose()
