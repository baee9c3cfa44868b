"""A scripted upstream on 127.0.0.1: plays OpenAI or Anthropic answers (JSON, or SSE frames with
delays, a hang or a dropped connection) over real HTTP/1.1 from a background thread, and records
every request it got and when each client hung up."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass(frozen=True)
class Frame:
    """One SSE event, sent `delay` seconds after the previous one. A str `data` goes as is;
    bytes are the whole frame, raw (comments, odd framing)."""

    data: Any
    event: str | None = None
    delay: float = 0.0

    def encode(self) -> bytes:
        if isinstance(self.data, bytes):
            return self.data
        payload = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {payload}\n\n".encode()


@dataclass(frozen=True)
class Reply:
    """What the upstream answers to one request."""

    status: int = 200
    json: Any = None  # a JSON body, or
    frames: list[Frame] | None = None  # an SSE body (chunked transfer encoding)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the status line
    hang_after: int | None = None  # after this many frames: hold the connection open
    drop_after: int | None = None  # after this many frames: close without ending the body
    reset: bool = False  # abort the connection (RST) before sending anything


def openai_frames(chunks: list[dict[str, Any]], *, done: bool = True) -> list[Frame]:
    return [Frame(chunk) for chunk in chunks] + ([Frame("[DONE]")] if done else [])


def anthropic_frames(events: list[dict[str, Any]]) -> list[Frame]:
    return [Frame(event, event=event["type"]) for event in events]


def refused(exchange: Exchange, path: str, key: str) -> Reply | None:
    """A 401 for a request on another path or without `Bearer key`: a scripted model answers
    only the proxy, sending ToolRelay's own provider key where its kind sends it."""
    if exchange.path != path or exchange.headers.get("authorization") != f"Bearer {key}":
        return Reply(401, json={"error": {"message": "bad key or path"}})
    return None


@dataclass
class Exchange:
    """One request the upstream received, and how its answer went."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    sent_at: list[float] = field(default_factory=list)  # time.monotonic() of each frame
    received_at: float = field(default_factory=time.monotonic)  # when the request was read
    client_closed_at: float | None = None
    closed: threading.Event = field(default_factory=threading.Event)  # the client hung up
    finished: threading.Event = field(default_factory=threading.Event)


class MockUpstream:
    """`with MockUpstream() as upstream: upstream.add(Reply(...))`; replies are queued per path
    and used once each, in order. A request with nothing queued gets a 500. `screen` sees each
    request first and may answer it itself (a validating mock's 400), leaving the queue as is."""

    def __init__(self, screen: Callable[[Exchange], Reply | None] | None = None) -> None:
        self._screen = screen
        self.cache: Callable[[Any, Reply], Reply] | None = None
        """Rewrites each queued answer's usage from the request body (a prompt cache double,
        tests/helpers/prompt_cache_double.py's CachedUsage); None: answers as scripted."""
        self.port = 0
        self.exchanges: list[Exchange] = []
        self._replies: dict[str, deque[Reply]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, reply: Reply, path: str = OPENAI_PATH) -> None:
        self._replies.setdefault(path, deque()).append(reply)

    def reset(self) -> None:
        self._replies.clear()
        self.exchanges.clear()

    def requests(self, path: str) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if exchange.path == path]

    def __enter__(self) -> MockUpstream:
        self._thread.start()
        start = asyncio.start_server(self._handle, "127.0.0.1", 0)
        self._server = asyncio.run_coroutine_threadsafe(start, self._loop).result(5)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        exchange: Exchange | None = None
        try:
            exchange = await _read_request(reader)
            self.exchanges.append(exchange)
            reply = self._screen(exchange) if self._screen is not None else None
            if reply is None:
                queue = self._replies.get(exchange.path)
                reply = queue.popleft() if queue else _NO_REPLY
                if self.cache is not None:
                    reply = self.cache(exchange.body, reply)
            hangup = asyncio.ensure_future(reader.read(1))  # completes when the client hangs up
            try:
                await _Player(writer, exchange, hangup).play(reply)
            finally:
                hangup.cancel()
                if hangup.done() and not hangup.cancelled():
                    hangup.exception()  # retrieved, so asyncio does not log it
        except (ConnectionError, asyncio.IncompleteReadError):
            if exchange is not None:
                _mark_closed(exchange)
        finally:
            writer.close()
            if exchange is not None:
                exchange.finished.set()
            self._tasks.discard(task)


_NO_REPLY = Reply(500, json={"error": {"message": "mock upstream: no reply queued"}})


def _mark_closed(exchange: Exchange) -> None:
    if exchange.client_closed_at is None:
        exchange.client_closed_at = time.monotonic()
        exchange.closed.set()


async def _read_request(reader: asyncio.StreamReader) -> Exchange:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *header_lines = head.split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    raw = await reader.readexactly(length) if length else b""
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw
    return Exchange(method, path, headers, body)


class _Player:
    """Writes one reply, watching for the client to hang up while it waits."""

    def __init__(
        self, writer: asyncio.StreamWriter, exchange: Exchange, hangup: asyncio.Future[bytes]
    ) -> None:
        self.writer, self.exchange, self.hangup = writer, exchange, hangup

    async def wait(self, seconds: float | None) -> bool:
        """Sleeps (None: until the client goes); True if the client hung up meanwhile."""
        await asyncio.wait({self.hangup}, timeout=seconds)
        if self.hangup.done():
            _mark_closed(self.exchange)
            return True
        return False

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def play(self, reply: Reply) -> None:
        if reply.delay and await self.wait(reply.delay):
            return
        if reply.reset:
            self.writer.transport.abort()
            return
        if reply.frames is None:
            body = b"" if reply.json is None else json.dumps(reply.json).encode()
            headers = {"content-type": "application/json", "content-length": str(len(body))}
            await self.write(_head(reply, headers) + body)
            return
        await self._play_frames(reply, reply.frames)

    async def _play_frames(self, reply: Reply, frames: list[Frame]) -> None:
        headers = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}
        await self.write(_head(reply, headers))
        for position, frame in enumerate([*frames, None]):
            if position == reply.drop_after:
                return
            if position == reply.hang_after:
                await self.wait(None)
                return
            if frame is None:
                await self.write(b"0\r\n\r\n")
                return
            if frame.delay and await self.wait(frame.delay):
                return
            data = frame.encode()
            await self.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.exchange.sent_at.append(time.monotonic())


def _head(reply: Reply, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {reply.status} Mock"]
    for name, value in (headers | {"connection": "close"} | reply.headers).items():
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
