"""The httpx side of the upstream clients, imported only where it is needed (a proxy that never
passes a request through and has no injected transport never imports httpx): the passthrough of
other /v1/ paths, which streams request bodies through httpx over aiohttp's pool
(httpx-aiohttp), and tests' injected transports (respx, httpx.MockTransport)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy

import aiohttp
import anyio
import httpx
from httpx_aiohttp import AiohttpTransport

from app.errors import ProxyError, UpstreamTimeout, UpstreamUnavailable
from app.relay.upstream_types import ReadLimits, UpstreamAnswer, host_port
from app.translators.base import UpstreamRequest

POOL_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=60)


def passthrough_client(
    transport: httpx.AsyncBaseTransport | None, timeout: httpx.Timeout
) -> httpx.AsyncClient:
    """A provider's client for the passthrough: over `transport` (tests'), else aiohttp's pool."""
    return httpx_client(transport or AiohttpTransport(limits=POOL_LIMITS), timeout)


def httpx_client(
    transport: httpx.AsyncBaseTransport, timeout: httpx.Timeout | None = None
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout if timeout is not None else httpx.Timeout(None),
        # A proxy serves many clients: no upstream cookie may ride along to another.
        cookies=httpx.Cookies(CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))),
    )


def httpx_timeout(limits: ReadLimits) -> httpx.Timeout:
    connect = limits.connect
    return httpx.Timeout(connect=connect, read=limits.read, write=connect, pool=connect)


class HttpxClient:
    """An httpx client as an upstream client: how tests' injected transports (respx,
    httpx.MockTransport) stand in for the network."""

    __slots__ = ("_client", "_provider_name")

    def __init__(self, client: httpx.AsyncClient, provider_name: str) -> None:
        self._client = client
        self._provider_name = provider_name

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> UpstreamAnswer:
        built = self._client.build_request(
            "POST",
            request.url,
            content=request.body,
            headers=request.headers,
            timeout=httpx_timeout(limits),
        )
        try:
            response = await self._client.send(built, stream=True)
        except httpx.HTTPError as exc:
            raise transport_error(exc, self._provider_name, host_port(request.url)) from None
        return HttpxAnswer(response, self._provider_name)

    async def aclose(self) -> None:
        await self._client.aclose()


class HttpxAnswer:
    __slots__ = ("_chunks", "_provider_name", "_response", "headers", "status_code")

    def __init__(self, response: httpx.Response, provider_name: str) -> None:
        self._response = response
        self._provider_name = provider_name
        self._chunks: AsyncIterator[bytes] | None = None
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def read(self) -> bytes:
        try:
            return await self._response.aread()
        except httpx.HTTPError as exc:
            raise transport_error(exc, self._provider_name, self._host()) from None

    async def read_some(self) -> bytes:
        if self._chunks is None:
            self._chunks = self._response.aiter_bytes()
        try:
            async for chunk in self._chunks:
                if chunk:
                    return chunk
        except httpx.HTTPError as exc:
            raise transport_error(exc, self._provider_name, self._host()) from None
        return b""

    async def close(self) -> None:
        await close_response(self._response)

    def _host(self) -> str:
        return host_port(str(self._response.url))


async def close_response(response: httpx.Response) -> None:
    """Releases the connection even while the calling task is being cancelled (a client that
    went away must not leave a pooled connection half-read)."""
    with anyio.CancelScope(shield=True):
        await response.aclose()


def transport_error(
    exc: httpx.HTTPError, provider_name: str, host: str | None = None
) -> ProxyError:
    """The one classification of httpx's failures: timeouts are 504, the rest 502. `host`,
    the `host:port` tried, is named when known (the request's URL by default)."""
    detail = type(exc).__name__
    if host is None:
        try:
            host = host_port(str(exc.request.url))
        except RuntimeError:  # an exception raised without its request
            host = None
    if isinstance(exc, httpx.TimeoutException) and not _is_disconnect(exc):
        return UpstreamTimeout(f"The upstream provider '{provider_name}' timed out ({detail}).")
    return UpstreamUnavailable(
        f"The upstream provider '{provider_name}' could not be reached "
        f"({detail if host is None else f'{host}, {detail}'})."
    )


def _is_disconnect(exc: httpx.HTTPError) -> bool:
    # httpx-aiohttp maps aiohttp's ServerDisconnectedError (a ClientConnectionError) to
    # httpx.ConnectTimeout; a peer that hung up is not a timeout.
    return isinstance(exc.__cause__, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError)
