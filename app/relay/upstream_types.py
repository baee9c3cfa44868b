"""What the relay asks of an upstream client, whichever library speaks to the network: send a
request, get the status and headers, then the body whole or read by read. Failures are
ProxyErrors (502/504) already, so the relay never sees a library's exception types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from app.translators.base import UpstreamRequest


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Seconds allowed to connect (pool wait included) and between two reads; the wait for
    the response headers is a read too. None: no limit."""

    connect: float | None
    read: float | None


class UpstreamAnswer(Protocol):
    """An answer whose headers have arrived. The caller reads its body once and closes it."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Case-insensitive."""
        ...

    async def read(self) -> bytes:
        """The whole body."""
        ...

    async def read_some(self) -> bytes:
        """What has arrived (waiting for at least one byte); b"" once the body has ended."""
        ...

    async def close(self) -> None:
        """Returns a fully read connection to the pool, closes one left half-read; done even
        while the calling task is being cancelled (a client that went away must not leave a
        pooled connection half-read)."""
        ...


class UpstreamClient(Protocol):
    """One provider's connection pool."""

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> UpstreamAnswer: ...

    async def aclose(self) -> None: ...


def host_port(url: str) -> str:
    """`host:port` of an upstream URL, for a failure's message: a host is not a secret, but
    a URL's path and query may be (Gemini's `?key=`), so only these are ever named."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port that is not a number: the host alone still helps
        return parts.hostname or "?"
    return f"{parts.hostname}:{port}"
