"""The production upstream client: aiohttp's own session and response reading, with no httpx
layer over it. Measured in bench/RESULTS.md (issue 23): httpx over httpx-aiohttp cost ~3x
aiohttp's CPU per non-stream request and ~2x per streamed chunk, the biggest single layer of
the proxy's own CPU."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
from yarl import URL

from app.errors import ProxyError, UpstreamTimeout, UpstreamUnavailable
from app.relay.upstream_types import ReadLimits, host_port
from app.translators.base import UpstreamRequest

POOL_SIZE = 1000
KEEPALIVE_SECONDS = 60
MAX_CACHED_TIMEOUTS = 1024


class AiohttpClient:
    """One provider's connection pool. The session is opened on first use: it must be made
    inside the running event loop, and `build_state` (shared with `eval`) is not."""

    __slots__ = ("_provider_name", "_session", "_timeouts")

    def __init__(self, provider_name: str) -> None:
        self._provider_name = provider_name
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[ReadLimits, aiohttp.ClientTimeout] = {}

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> AiohttpAnswer:
        session = self._session
        if session is None:
            session = self._session = _new_session()
        try:
            response = await session.request(
                "POST",
                # As built: a translator's URL is already percent-encoded, and yarl would
                # otherwise decode `%3A` in a path segment (Bedrock's model ids), sending a path
                # other than the one SigV4 signed.
                URL(request.url, encoded=True),
                data=request.body,
                headers=request.headers,
                timeout=self._timeout(limits),
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise network_error(exc, self._provider_name, host_port(request.url)) from None
        return AiohttpAnswer(response, self._provider_name)

    def _timeout(self, limits: ReadLimits) -> aiohttp.ClientTimeout:
        """One ClientTimeout per deployment's limits, built once (ReadLimits are cached per
        deployment by Upstreams.limits)."""
        timeout = self._timeouts.get(limits)
        if timeout is None:
            if len(self._timeouts) >= MAX_CACHED_TIMEOUTS:
                self._timeouts.clear()
            timeout = self._timeouts[limits] = aiohttp.ClientTimeout(
                total=None, connect=limits.connect, sock_read=limits.read
            )
        return timeout

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _new_session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        limit=POOL_SIZE, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS
    )
    # A proxy serves many clients: no upstream cookie may ride along to another.
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


class AiohttpAnswer:
    """An upstream answer whose headers have arrived; the body is read once, whole or in
    pieces as they come."""

    __slots__ = ("_provider_name", "_response", "headers", "status_code")

    def __init__(self, response: aiohttp.ClientResponse, provider_name: str) -> None:
        self._response = response
        self._provider_name = provider_name
        self.status_code: int = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise network_error(exc, self._provider_name, self._host()) from None

    async def read_some(self) -> bytes:
        try:
            return await self._response.content.readany()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise network_error(exc, self._provider_name, self._host()) from None

    def _host(self) -> str:
        return host_port(str(self._response.url))

    async def close(self) -> None:
        """No await in here, so a cancelled task still gets it done."""
        self._response.close()


def network_error(exc: BaseException, provider_name: str, host: str) -> ProxyError:
    """The one classification of aiohttp's failures: timeouts are 504, the rest 502. A peer
    that hung up is not a timeout, even when it hung up while we waited. `host` is the
    `host:port` tried (an operator's first question)."""
    if isinstance(exc, TimeoutError):  # aiohttp's read and connect timeouts are TimeoutErrors
        what = "connecting" if isinstance(exc, aiohttp.ConnectionTimeoutError) else "reading"
        return UpstreamTimeout(f"The upstream provider '{provider_name}' timed out ({what}).")
    return UpstreamUnavailable(
        f"The upstream provider '{provider_name}' could not be reached ({host}, {_reason(exc)})."
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connection failed"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
        return "connection closed"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the answer was cut short"
    return type(exc).__name__
