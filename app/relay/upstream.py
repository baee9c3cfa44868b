"""One upstream client per configured provider, and the per-deployment limits an attempt uses.
The only module that decides how requests go upstream:

- networked providers: aiohttp directly (`aiohttp_client.py`, the hot path);
- built-in upstreams (the demo): served in-process by `LocalClient`, taking the same relay
  and translator path as a networked upstream;
- an injected httpx transport (tests' respx and MockTransport) replaces the network for every
  networked provider, through `HttpxClient`;
- the passthrough of other /v1/ paths streams request bodies through httpx (over aiohttp's
  pool via httpx-aiohttp): not on any per-chunk path.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Protocol
from urllib.parse import urlsplit

import aiohttp
import anyio
import httpx
from httpx_aiohttp import AiohttpTransport

from app.config import Config, TimeoutsConfig, effective_timeouts
from app.errors import ProxyError, UpstreamTimeout, UpstreamUnavailable
from app.relay.aiohttp_client import AiohttpClient
from app.relay.upstream_types import ReadLimits, UpstreamAnswer, UpstreamClient, host_port
from app.translators.base import LocalUpstream, UpstreamRequest

MAX_CACHED_LIMITS = 1024
POOL_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=60)


@dataclass(frozen=True, slots=True)
class AttemptLimits:
    """A deployment's timeouts in the forms an attempt uses, built once per deployment.

    stream: for a stream, whose read limit is the idle limit (a stall past the total ends
    there too); answer: for a non-stream call, whose read limit covers the wait for the
    response headers (first_token); first_token and total in seconds, for the event-loop
    deadlines the transport cannot express."""

    stream: ReadLimits
    answer: ReadLimits
    first_token: float
    total: float


class Upstreams:
    """Each configured provider's client, and (opened when first needed) its httpx client for
    the passthrough."""

    def __init__(
        self,
        config: Config,
        *,
        local: Mapping[str, LocalUpstream],
        transport: httpx.AsyncBaseTransport | None = None,
        credentials: Mapping[str, RequestAuth] | None = None,
    ) -> None:
        """`credentials`: by provider, the auth applied to each of its requests just before it
        is sent (app/credentials: Vertex's tokens), for providers whose auth is not a static
        header."""
        self._config = config
        self._transport = transport
        self._clients: dict[str, UpstreamClient] = {}
        self._passthrough: dict[str, httpx.AsyncClient] = {}
        self._limits: dict[str, AttemptLimits] = {}
        for name, provider in config.providers.items():
            serve = local.get(provider.kind)
            if serve is not None:
                self._clients[name] = LocalClient(serve)
            elif transport is not None:
                self._clients[name] = HttpxClient(_httpx_client(transport), name)
            else:
                self._clients[name] = AiohttpClient(name)
        self._credentials = dict(credentials or {})
        for name, auth in self._credentials.items():
            self._clients[name] = AuthorizedClient(self._clients[name], auth)

    def client(self, provider_name: str) -> UpstreamClient:
        return self._clients[provider_name]

    def passthrough_client(self, provider_name: str) -> httpx.AsyncClient:
        client = self._passthrough.get(provider_name)
        if client is None:
            provider = self._config.providers[provider_name]
            timeouts = effective_timeouts(provider, None)
            client = self._passthrough[provider_name] = _httpx_client(
                self._transport or AiohttpTransport(limits=POOL_LIMITS),
                httpx.Timeout(timeouts.total, connect=timeouts.connect),
            )
        return client

    def limits(self, deployment_key: str, timeouts: TimeoutsConfig) -> AttemptLimits:
        limits = self._limits.get(deployment_key)
        if limits is None:
            if len(self._limits) >= MAX_CACHED_LIMITS:  # PROVIDER/MODEL names are the client's
                self._limits.clear()
            limits = self._limits[deployment_key] = _attempt_limits(timeouts)
        return limits

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        for auth in self._credentials.values():
            close = getattr(auth, "close", None)  # a token cache's connection pool
            if close is not None:
                close()
        for passthrough in self._passthrough.values():
            await passthrough.aclose()


def _httpx_client(
    transport: httpx.AsyncBaseTransport, timeout: httpx.Timeout | None = None
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout if timeout is not None else httpx.Timeout(None),
        # A proxy serves many clients: no upstream cookie may ride along to another.
        cookies=httpx.Cookies(CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))),
    )


def _attempt_limits(timeouts: TimeoutsConfig) -> AttemptLimits:
    total = _seconds(timeouts.total)
    connect = timeouts.connect
    idle = min(_seconds(timeouts.idle), total)
    return AttemptLimits(
        stream=ReadLimits(connect, None if math.isinf(idle) else idle),
        answer=ReadLimits(connect, timeouts.first_token),
        first_token=min(_seconds(timeouts.first_token), total),
        total=total,
    )


def _seconds(value: float | None) -> float:
    """Timeouts come filled in (effective_timeouts); None would mean no limit."""
    return math.inf if value is None else float(value)


def httpx_timeout(limits: ReadLimits) -> httpx.Timeout:
    connect = limits.connect
    return httpx.Timeout(connect=connect, read=limits.read, write=connect, pool=connect)


class RequestAuth(Protocol):
    """What the relay asks of a provider's credentials (app/credentials' Credentials)."""

    async def apply(self, request: UpstreamRequest) -> UpstreamRequest: ...


class AuthorizedClient:
    """A provider's client whose every request gets its auth first (a token, a signature):
    applied here, just before sending, so translators stay pure and every API path (chat,
    count_tokens, embeddings) is covered."""

    __slots__ = ("_auth", "_inner")

    def __init__(self, inner: UpstreamClient, auth: RequestAuth) -> None:
        self._inner = inner
        self._auth = auth

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> UpstreamAnswer:
        return await self._inner.open(await self._auth.apply(request), limits)

    async def aclose(self) -> None:
        await self._inner.aclose()


class LocalClient:
    """A built-in upstream (the demo model) served in-process, so its requests take exactly
    the path a networked upstream's do: same relay and translator."""

    __slots__ = ("_serve",)

    def __init__(self, serve: LocalUpstream) -> None:
        self._serve = serve

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> UpstreamAnswer:
        path = urlsplit(request.url).path
        status, content_type, parts = self._serve(path, request.body)
        return LocalAnswer(status, {"content-type": content_type}, parts)

    async def aclose(self) -> None:
        pass


class LocalAnswer:
    """An answer whose whole body is already here, in parts (one read each)."""

    __slots__ = ("_parts", "headers", "status_code")

    def __init__(self, status: int, headers: Mapping[str, str], parts: list[bytes]) -> None:
        self.status_code = status
        self.headers = headers
        self._parts = iter(parts)

    async def read(self) -> bytes:
        return b"".join(self._parts)

    async def read_some(self) -> bytes:
        return next(self._parts, b"")

    async def close(self) -> None:
        pass


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
