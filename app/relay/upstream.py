"""One upstream client per configured provider, and the per-deployment limits an attempt uses.
The only module that decides how requests go upstream:

- networked providers: aiohttp directly (`aiohttp_client.py`, the hot path);
- built-in upstreams (the demo): served in-process by `LocalClient`, taking the same relay
  and translator path as a networked upstream;
- an injected httpx transport (tests' respx and MockTransport) replaces the network for every
  networked provider, through `HttpxClient`;
- the passthrough of other /v1/ paths streams request bodies through httpx (over aiohttp's
  pool via httpx-aiohttp): not on any per-chunk path.

httpx itself (httpx_client.py) is imported only by the last two: ~4 MB a plain proxy does not
carry (DESIGN.md, "imports").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from app.config import Config, TimeoutsConfig, effective_timeouts
from app.relay.aiohttp_client import AiohttpClient
from app.relay.upstream_types import ReadLimits, UpstreamAnswer, UpstreamClient
from app.translators.base import LocalUpstream, UpstreamRequest

if TYPE_CHECKING:
    import httpx

MAX_CACHED_LIMITS = 1024


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
                from app.relay.httpx_client import HttpxClient, httpx_client  # noqa: PLC0415

                self._clients[name] = HttpxClient(httpx_client(transport), name)
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
            import httpx  # noqa: PLC0415

            from app.relay.httpx_client import passthrough_client  # noqa: PLC0415

            provider = self._config.providers[provider_name]
            timeouts = effective_timeouts(provider, None)
            client = self._passthrough[provider_name] = passthrough_client(
                self._transport, httpx.Timeout(timeouts.total, connect=timeouts.connect)
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
