"""A minimal HTTP/1.1 keep-alive client connection (asyncio protocol + httptools' parser).

Cheap per request on purpose: the load generator shares two cores with the proxy it measures.
One request at a time per connection; the request is prebuilt bytes, sent as is.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from time import perf_counter
from typing import cast
from urllib.parse import urlsplit

import httptools


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    latency: float  # seconds, request written -> last byte read
    ttfb: float  # seconds, request written -> first body byte read


def loopback_address(url: str) -> tuple[str, int]:
    """(host, port) of `url`, refusing anything that is not on this machine's loopback."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url}: only http://HOST:PORT URLs are supported")
    host = "127.0.0.1" if parts.hostname == "localhost" else parts.hostname
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{url}: the benchmark only sends traffic to loopback addresses")
    return host, parts.port or 80


def build_request(url: str, body: bytes, headers: dict[str, str]) -> bytes:
    parts = urlsplit(url)
    lines = [
        f"POST {parts.path or '/'} HTTP/1.1",
        f"host: {parts.netloc}",
        "content-type: application/json",
        "accept: application/json, text/event-stream",
        f"content-length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Connection(asyncio.Protocol):
    """One keep-alive connection; `send` one request, await its Reply."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._future: asyncio.Future[Reply] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._body: list[bytes] = []
        self._sent = 0.0
        self._first = 0.0
        self.closed = False

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(lambda: cls(loop), host, port)
        return protocol

    def send(self, raw: bytes, timeout: float) -> asyncio.Future[Reply]:
        assert self._transport is not None
        assert self._future is None
        self._future = future = self._loop.create_future()
        self._body = []
        self._first = 0.0
        self._timer = self._loop.call_later(timeout, self._fail, TimeoutError("request timed out"))
        self._sent = perf_counter()
        self._transport.write(raw)
        return future

    def close(self) -> None:
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("connection closed by the server"))

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        if not self._first:
            self._first = perf_counter()
        self._body.append(body)

    def on_message_complete(self) -> None:
        done = perf_counter()
        future, self._future = self._future, None
        if self._timer is not None:
            self._timer.cancel()
        if not self._parser.should_keep_alive():
            self.close()
        if future is not None and not future.done():
            status = self._parser.get_status_code()
            first = self._first or done
            reply = Reply(status, b"".join(self._body), done - self._sent, first - self._sent)
            future.set_result(reply)

    def _fail(self, exc: BaseException) -> None:
        future, self._future = self._future, None
        if self._timer is not None:
            self._timer.cancel()
        if future is not None and not future.done():
            future.set_exception(exc)
            self.close()
