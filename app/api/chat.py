"""POST /v1/chat/completions as a plain ASGI app: validate at the edge, hand the request to the
dispatcher, send its answer, and stop everything the moment the client goes away.

Plain ASGI rather than a Starlette route because this is the hot path: no Request object, no
StreamingResponse task group, no framework middleware, one `send` per relayed frame. Errors are
raised as ProxyError and rendered by RequestMiddleware, which wraps this app.
"""

from __future__ import annotations

import asyncio

import orjson
from starlette.types import Receive, Scope, Send

from app.api.middleware import RECORD_KEY
from app.openai_types import parse_chat_request
from app.routing.dispatch import Answer, answer
from app.state import ProxyState

PATH = "/v1/chat/completions"
JSON_CONTENT = (b"content-type", b"application/json")
STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_END = {"type": "http.response.body", "body": b"", "more_body": False}


class ClientGone(Exception):
    """The client hung up before its request body arrived: there is nobody to answer."""


async def _chat_completions(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = await _read_body(receive)
    except ClientGone:
        return
    chat_request = parse_chat_request(body)
    watcher = DisconnectWatcher(receive)
    try:
        result = await answer(proxy, chat_request, scope[RECORD_KEY])
        await _send_answer(result, send, watcher)
    except asyncio.CancelledError:
        if not watcher.cancelled_us():
            raise
    finally:
        watcher.stop()


class ChatCompletions:
    """The handler as an ASGI app object, so the framework's router takes it as is (and answers
    405 to other methods) while RequestMiddleware calls it directly."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _chat_completions(scope, receive, send)


chat_completions = ChatCompletions()


async def _send_answer(result: Answer, send: Send, watcher: DisconnectWatcher) -> None:
    headers = [(b"x-toolrelay-model", result.model_name.encode())]
    headers += [(name.encode(), value.encode()) for name, value in result.headers.items()]
    if result.frames is None:
        content = orjson.dumps(result.completion)
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
        async for frame in frames:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        watcher.stop()
        await send(_END)
    finally:
        await frames.aclose()  # however it ended: the relay closes its upstream response


async def _read_body(receive: Receive) -> bytes:
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if not message.get("more_body"):
        return body
    parts = [body]
    while message.get("more_body"):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        parts.append(message.get("body", b""))
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
