"""Pooled HTTP clients, one per provider, and the one table that turns transport failures into
ProxyErrors. The only module that sends requests upstream."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import aiohttp
import anyio
import httpx
from httpx_aiohttp import AiohttpTransport

from app.config import Config, TimeoutsConfig, effective_timeouts
from app.errors import ProxyError, UpstreamTimeout, UpstreamUnavailable
from app.translators.base import LocalUpstream, UpstreamRequest

MAX_CACHED_LIMITS = 1024
POOL_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=60)


class LocalTransport(httpx.AsyncBaseTransport):
    """Serves a built-in upstream (the demo model) in-process, so its requests take exactly the
    path a networked upstream's do: same client, relay and translator."""

    def __init__(self, serve: LocalUpstream) -> None:
        self._serve = serve

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        status, content_type, parts = self._serve(request.url.path, await request.aread())
        return httpx.Response(
            status,
            headers={"content-type": content_type},
            stream=_PartStream(parts),
            request=request,
        )


class _PartStream(httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self._parts:
            yield part


@dataclass(frozen=True, slots=True)
class AttemptLimits:
    """A deployment's timeouts in the forms an attempt uses, built once per deployment.

    stream: the transport's timeouts for a stream, whose read timeout is the idle limit (a
    stall past the total ends there too); answer: for a non-stream call, whose read timeout
    covers the wait for the response headers (first_token); first_token and total in
    seconds, for the event-loop deadlines the transport cannot express."""

    stream: httpx.Timeout
    answer: httpx.Timeout
    first_token: float
    total: float


class Upstreams:
    """One `httpx.AsyncClient` per configured provider, each with its own connection pool."""

    def __init__(
        self,
        config: Config,
        *,
        local: Mapping[str, LocalUpstream],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._limits: dict[str, AttemptLimits] = {}
        for name, provider in config.providers.items():
            serve = local.get(provider.kind)
            client_transport: httpx.AsyncBaseTransport
            if serve is not None:
                client_transport = LocalTransport(serve)
            elif transport is not None:
                client_transport = transport
            else:
                # aiohttp's pool: measured ~4x less proxy CPU per request than httpx's own.
                client_transport = AiohttpTransport(limits=POOL_LIMITS)
            timeouts = effective_timeouts(provider, None)
            self._clients[name] = httpx.AsyncClient(
                transport=client_transport,
                timeout=httpx.Timeout(timeouts.total, connect=timeouts.connect),
                # A proxy serves many clients: no upstream cookie may ride along to another.
                cookies=httpx.Cookies(CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))),
            )

    def client(self, provider_name: str) -> httpx.AsyncClient:
        return self._clients[provider_name]

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


def _attempt_limits(timeouts: TimeoutsConfig) -> AttemptLimits:
    total = _seconds(timeouts.total)
    connect = timeouts.connect

    def transport(read: float | None) -> httpx.Timeout:
        return httpx.Timeout(connect=connect, read=read, write=connect, pool=connect)

    return AttemptLimits(
        stream=transport(min(_seconds(timeouts.idle), total)),
        answer=transport(timeouts.first_token),
        first_token=min(_seconds(timeouts.first_token), total),
        total=total,
    )


def _seconds(value: float | None) -> float:
    """Timeouts come filled in (effective_timeouts); None would mean no limit."""
    return math.inf if value is None else float(value)


async def open_response(
    client: httpx.AsyncClient,
    upstream_request: UpstreamRequest,
    provider_name: str,
    timeout: httpx.Timeout | None = None,
) -> httpx.Response:
    """Sends the request and returns once the upstream's headers arrived; the body is left to
    the caller, who must close the response. `timeout` replaces the client's for this one
    request (per-model timeouts)."""
    request = client.build_request(
        "POST",
        upstream_request.url,
        content=upstream_request.body,
        headers=upstream_request.headers,
        timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
    )
    try:
        return await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise transport_error(exc, provider_name) from None


async def close_response(response: httpx.Response) -> None:
    """Releases the connection even while the calling task is being cancelled (a client that
    went away must not leave a pooled connection half-read)."""
    with anyio.CancelScope(shield=True):
        await response.aclose()


def transport_error(exc: httpx.HTTPError, provider_name: str) -> ProxyError:
    """The one classification of network failures: timeouts are 504, the rest 502."""
    detail = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException) and not _is_disconnect(exc):
        return UpstreamTimeout(f"The upstream provider '{provider_name}' timed out ({detail}).")
    return UpstreamUnavailable(
        f"The upstream provider '{provider_name}' could not be reached ({detail})."
    )


def _is_disconnect(exc: httpx.HTTPError) -> bool:
    # httpx-aiohttp maps aiohttp's ServerDisconnectedError (a ClientConnectionError) to
    # httpx.ConnectTimeout; a peer that hung up is not a timeout.
    return isinstance(exc.__cause__, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError)
