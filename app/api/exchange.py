"""The HTTP plumbing both client-facing APIs share, as plain ASGI: read a request's body, send
an answer (one JSON body, or SSE frames as they come, with keep-alive pings when asked), and
stop everything the moment the client goes away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.middleware import RECORD_KEY
from app.errors import RequestTooLarge
from app.openai_types import ChatRequest
from app.routing.dispatch import Answer, answer
from app.routing.face import OPENAI_FACE, Face
from app.state import ProxyState
from app.translators.base import RelayedJSON

JSON_CONTENT = (b"content-type", b"application/json")
STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_END = {"type": "http.response.body", "body": b"", "more_body": False}


class AsgiHandler:
    """A plain ASGI handler as an app object, so the framework's router takes it as is (and
    answers 405 to other methods) while RequestMiddleware calls it directly."""

    __slots__ = ("_handle",)

    def __init__(self, handle: ASGIApp) -> None:
        self._handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._handle(scope, receive, send)


class ClientGone(Exception):
    """The client hung up before its request body arrived: there is nobody to answer."""


class Pings:
    """An SSE frame sent whenever a stream has been silent for `seconds` (Anthropic's `ping`),
    so clients and the proxies between them do not take a thinking upstream for a dead one."""

    __slots__ = ("frame", "seconds")

    def __init__(self, frame: bytes, seconds: float) -> None:
        self.frame = frame
        self.seconds = seconds


async def answer_client(
    scope: Scope,
    request: ChatRequest | Callable[[], Awaitable[Answer]],
    exchange: tuple[Receive, Send],
    face: Face = OPENAI_FACE,
    *,
    pings: Pings | None = None,
    before_send: Callable[[Answer], Awaitable[None]] | None = None,
) -> None:
    """Every client API's request, once it is a chat request: dispatched (or, given a producer,
    answered by it: the hosted-tool loop's several dispatches), then its answer sent
    (`before_send` may add headers or keep the answer first), everything stopped the moment
    the client goes away."""
    receive, send = exchange
    proxy: ProxyState = scope["app"].state.proxy
    watcher = DisconnectWatcher(receive)
    try:
        if isinstance(request, ChatRequest):
            result = await answer(proxy, request, scope[RECORD_KEY], face)
        else:
            result = await request()
        if before_send is not None:
            await before_send(result)
        await send_answer(result, send, watcher, pings)
    except asyncio.CancelledError:
        if not watcher.cancelled_us():
            raise
    finally:
        watcher.stop()


async def send_answer(
    result: Answer, send: Send, watcher: DisconnectWatcher, pings: Pings | None = None
) -> None:
    headers = [(b"x-toolrelay-model", result.model_name.encode())]
    headers += [(name.encode(), value.encode()) for name, value in result.headers.items()]
    if result.frames is None:
        completion = result.completion
        content = (
            completion.raw if isinstance(completion, RelayedJSON) else orjson.dumps(completion)
        )
        length = (b"content-length", str(len(content)).encode())
        watcher.stop()  # from here on only sends: a disconnect has nothing left to cancel
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [JSON_CONTENT, length, *headers],
            }
        )
        await send({"type": "http.response.body", "body": content})
        return
    frames = result.frames
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*STREAM_HEADERS, *headers],
            }
        )
        if pings is None:
            async for frame in frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        else:
            await _send_with_pings(frames, send, pings)
        watcher.stop()
        await send(_END)
    finally:
        await frames.aclose()  # however it ended: the relay closes its upstream response


async def _send_with_pings(frames: AsyncGenerator[bytes, None], send: Send, pings: Pings) -> None:
    """Relays the frames while a timer task sends a ping after each silence of
    `pings.seconds`; a lock keeps a ping from landing inside another send."""
    loop = asyncio.get_running_loop()
    lock = asyncio.Lock()
    last_sent = loop.time()

    async def ping_when_silent() -> None:
        while True:
            await asyncio.sleep(max(0.0, last_sent + pings.seconds - loop.time()))
            if loop.time() - last_sent >= pings.seconds:
                async with lock:
                    await send(
                        {"type": "http.response.body", "body": pings.frame, "more_body": True}
                    )

    pinger = asyncio.ensure_future(ping_when_silent())
    try:
        async for frame in frames:
            async with lock:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            last_sent = loop.time()
    finally:
        pinger.cancel()


async def read_body(scope: Scope, receive: Receive) -> bytes:
    """The request's body, at most `server.max_body_mb` of it: a Content-Length past the limit
    is refused before anything is read, and a body sent without one as soon as the bytes
    received pass it, so an oversized body is never held (the server drops what follows)."""
    server = scope["app"].state.proxy.config.server
    limit: int = server.max_body_bytes
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            raise RequestTooLarge(server.max_body_mb)
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    body: bytes = message.get("body", b"")
    size = len(body)
    if size > limit:
        raise RequestTooLarge(server.max_body_mb)
    if not message.get("more_body"):
        return body
    parts = [body]
    while message.get("more_body"):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        part: bytes = message.get("body", b"")
        size += len(part)
        if size > limit:
            raise RequestTooLarge(server.max_body_mb)
        parts.append(part)
    return b"".join(parts)


class DisconnectWatcher:
    """Cancels the request's task when the client disconnects, so an abandoned request stops
    at once: the upstream call or stream is closed (and the provider stops generating) instead
    of running to its end for nobody. Servers do not all fail `send` after a disconnect
    (uvicorn's httptools protocol drops the data silently), so waiting on `receive` is the
    only reliable signal. One task per request, created after the body is read."""

    __slots__ = ("_fired", "_task", "_watch")

    def __init__(self, receive: Receive) -> None:
        self._task = asyncio.current_task()
        self._fired = False
        self._watch: asyncio.Task[None] | None = asyncio.ensure_future(self._wait(receive))

    async def _wait(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if self._watch is not None and self._task is not None:
            self._fired = True
            self._task.cancel()

    def stop(self) -> None:
        """Past this point a disconnect cancels nothing (the response is complete, or about to
        be: the server reports the end of a response as a disconnect too)."""
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def cancelled_us(self) -> bool:
        """Whether a CancelledError came from this watcher (then the request is over and the
        cancellation is consumed), not from the server shutting the task down."""
        if self._fired and self._task is not None:
            self._task.uncancel()
            return True
        return False
