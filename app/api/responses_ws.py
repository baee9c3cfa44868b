"""The Responses WebSocket transport (CONTRACT.md, "Codex and Claude Code: all of their
protocol"): `GET /v1/responses` upgraded to a WebSocket, as Codex opens it (`OpenAI-Beta:
responses_websockets=2026-02-06`). One more door onto the same Responses path: each
`{"type": "response.create", ...}` message is run as a streamed `POST /v1/responses` through
RequestMiddleware and the HTTP handler themselves (so keys, limits, spend, logs and metrics
are the HTTP stream's), and each SSE event it writes goes out as its own text frame.

What the socket adds: Codex's warm-up (`generate: false`) is answered here with no upstream
call, and the connection remembers its own conversation, so a `previous_response_id` naming
one of its responses works with `store: false` (the input is rebuilt before the request runs,
exactly what Codex would send over HTTPS)."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from typing import Any

import orjson
from starlette.types import Message, Receive, Scope, Send

from app.api.auth import client_key
from app.api.exchange import AsgiHandler
from app.api.middleware import RequestMiddleware, rendered_error
from app.api.responses import PATH, create
from app.api.ws_frames import FrameWriter
from app.errors import InvalidRequest, ProxyError, RequestTooLarge, log_exception
from app.faces.responses.output import response_id, response_shell, responses_usage
from app.faces.responses.request import input_items
from app.openai_types import decode_request_body
from app.ops.keys import ClientKey
from app.state import ProxyState

logger = logging.getLogger("toolrelay.http")

REMEMBERED = 16
"""Responses a connection keeps for `previous_response_id` (Codex only names the last one)."""
SOCKET_ONLY = ("type", "generate", "client_metadata")
"""Fields of a `response.create` message that are the socket's, not the create body's."""
_DROPPED_HEADERS = {b"x-request-id", b"content-length", b"content-type", b"transfer-encoding"}
_INTERNAL = ProxyError("Internal error in the proxy.", code="internal_error")
_ERROR_SCOPE: dict[str, Any] = {"path": PATH, "headers": []}  # error frames: OpenAI's shape


class HandshakeHeaderLines(logging.Filter):
    """Drops the `websockets` library's debug lines that show an upgrade request's headers one
    by one (uvicorn hands it its `uvicorn.error` logger): one of them is the client's key."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "< %s: %s"


async def _socket(scope: Scope, receive: Receive, send: Send) -> None:
    """`GET /v1/responses` upgraded (ToolRelayApp calls it directly): the key checked at the
    upgrade (a bad one is an HTTP 401 with the usual error body), then the connection served
    until the client closes it."""
    proxy: ProxyState = scope["app"].state.proxy
    if (await receive())["type"] != "websocket.connect":
        return
    headers = dict(scope["headers"])
    key = None
    if proxy.ops.keys.required:
        try:
            key = client_key(
                proxy.ops.keys, headers.get(b"authorization"), headers.get(b"x-api-key")
            )
        except ProxyError as refusal:
            await _deny(scope, send, refusal, proxy)
            return
    await send({"type": "websocket.accept"})
    await ResponsesConnection(scope, (receive, send), key).serve()


async def _deny(scope: Scope, send: Send, refusal: ProxyError, proxy: ProxyState) -> None:
    """An HTTP answer instead of the upgrade where the server can send one (uvicorn can);
    else a close before accepting, which the server answers with 403."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    status, body = rendered_error(scope, refusal, proxy.redact)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "websocket.http.response.start", "status": status, "headers": head})
    await send({"type": "websocket.http.response.body", "body": body})


class ResponsesConnection:
    """One accepted socket: its messages answered one after another, in order."""

    def __init__(self, scope: Scope, socket: tuple[Receive, Send], key: ClientKey | None) -> None:
        self.scope = scope
        self._receive, send = socket
        self.proxy: ProxyState = scope["app"].state.proxy
        self.key = key
        self._frames = FrameWriter(send)
        self._door = RequestMiddleware(create, {})
        self._headers = [(k, v) for k, v in scope["headers"] if k not in _DROPPED_HEADERS]
        self._memory: OrderedDict[str, list[Any]] = OrderedDict()
        self._pending: deque[str | bytes] = deque()
        self.closed = asyncio.Event()

    async def serve(self) -> None:
        while (message := await self.next_message()) is not None:
            await self._answer(message)

    async def next_message(self) -> str | bytes | None:
        """The next message the client sent (one that came while a response was streaming
        first), or None once it has closed the socket. Between responses the socket is read
        here; during one, by the request's disconnect watcher (Exchange.receive), so a client
        that goes away mid-response cancels the request, as on HTTP."""
        if self._pending:
            return self._pending.popleft()
        while not self.closed.is_set():
            if await self.read() and self._pending:
                return self._pending.popleft()
        return None

    async def read(self) -> bool:
        """One ASGI message off the socket; False once the client has closed it."""
        message = await self._receive()
        if message["type"] == "websocket.disconnect":
            self.closed.set()
            return False
        if message["type"] == "websocket.receive":
            text = message.get("text")
            self._pending.append(text if text is not None else message.get("bytes") or b"")
        return True

    async def _answer(self, message: str | bytes) -> None:
        try:
            body = self._create_body(message)
            if body is None:
                return
            if body.pop("generate", True) is False:
                await self._warm_up(body)
                return
            await self._run(body)
        except ProxyError as refusal:
            await self.error_frame(refusal)
        except Exception:
            log_exception(logger, self.proxy.redact, "unhandled error on a Responses WebSocket")
            await self.error_frame(_INTERNAL)

    def _create_body(self, message: str | bytes) -> dict[str, Any] | None:
        """The create body a message carries (None for `response.processed`, Codex's receipt,
        which needs no answer), or a 400."""
        raw = message.encode() if isinstance(message, str) else message
        limit = self.proxy.config.server
        if len(raw) > limit.max_body_bytes:
            raise RequestTooLarge(limit.max_body_mb)
        body = decode_request_body(raw, param_style="openai")
        kind = body.pop("type", None)
        if kind == "response.processed":
            return None
        if kind != "response.create":
            raise InvalidRequest(
                "type: a message on this socket is {'type': 'response.create', ...}",
                param="type",
            )
        body.pop("client_metadata", None)
        generate = body.get("generate", True)
        if not isinstance(generate, bool):
            raise InvalidRequest("generate: Input should be a valid boolean", param="generate")
        return body

    async def _warm_up(self, body: dict[str, Any]) -> None:
        """Codex's warm-up: a response with no output, made here. Forwarding it would put one
        more model turn in front of every later one."""
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidRequest("model: Field required", param="model")
        route = self.proxy.router.resolve(model)
        if self.key is not None:
            self.key.check(route.model_name)
        given = self._resolved_input(body)
        resp_id = response_id(self.proxy.new_id())
        created = int(self.proxy.clock())
        shell = response_shell(body, resp_id=resp_id, created=created, model=model)
        done = {**shell, "status": "completed", "usage": responses_usage(None)}
        await self.text({"type": "response.created", "sequence_number": 0, "response": shell})
        await self.text({"type": "response.completed", "sequence_number": 1, "response": done})
        if "previous_response_id" not in body:
            self.remember(resp_id, given)

    def _resolved_input(self, body: dict[str, Any]) -> list[Any]:
        """The input with this connection's own earlier response in front when
        `previous_response_id` names one (it is then taken off the body); one it does not
        know stays for the store to resolve."""
        given = input_items(body.get("input"))
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self._memory:
            del body["previous_response_id"]
            given = [*self._memory[previous], *given]
            body["input"] = given
        return given

    async def _run(self, body: dict[str, Any]) -> None:
        given = self._resolved_input(body)
        body["stream"] = True
        encoded = orjson.dumps(body)
        exchange = Exchange(self, encoded)
        await self._door(self._http_scope(len(encoded)), exchange.receive, exchange.send)
        output = exchange.completed_output
        if output is not None and "previous_response_id" not in body:
            self.remember(exchange.completed_id, [*given, *output])

    def _http_scope(self, length: int) -> Scope:
        """The POST /v1/responses this message stands for, with the upgrade's headers (the key,
        Codex's own) and a request id of its own."""
        ws = self.scope
        head = [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]
        return {
            "type": "http",
            "asgi": ws.get("asgi", {"version": "3.0"}),
            "http_version": "1.1",
            "method": "POST",
            "scheme": "https" if ws.get("scheme") == "wss" else "http",
            "path": PATH,
            "raw_path": PATH.encode(),
            "root_path": ws.get("root_path", ""),
            "query_string": b"",
            "headers": [*self._headers, *head],
            "client": ws.get("client"),
            "server": ws.get("server"),
            "app": ws["app"],
            "state": ws.get("state", {}),
        }

    def remember(self, resp_id: str, items: list[Any]) -> None:
        self._memory[resp_id] = items
        while len(self._memory) > REMEMBERED:
            self._memory.popitem(last=False)

    async def error_frame(self, error: ProxyError) -> None:
        status, body = rendered_error(_ERROR_SCOPE, error, self.proxy.redact)
        await self.frames([_error_frame(status, body)])

    async def text(self, event: dict[str, Any]) -> None:
        await self.frames([orjson.dumps(event)])

    async def frames(self, payloads: list[bytes]) -> None:
        """Text frames, unless the client has gone (then they have no reader)."""
        if not self.closed.is_set() and not await self._frames.write(payloads):
            self.closed.set()


def _error_frame(status: int, body: bytes) -> bytes:
    """`{"type": "error", "status": N, "error": {...}}`: the HTTP error body, wrapped as Codex
    reads an error on the socket."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        error = None
    if not isinstance(error, dict):
        error = {"message": body.decode(errors="replace"), "type": "api_error"}
    return orjson.dumps({"type": "error", "status": status, "error": error})


class Exchange:
    """The receive and send of one message's HTTP request: the body given once, a disconnect
    when the socket closes; the SSE the handler writes split into events, each sent as a text
    frame as it comes, and an error answer (any status but 200) sent as one error frame."""

    __slots__ = ("_buffer", "_error", "body", "completed_id", "completed_output", "conn", "status")

    def __init__(self, conn: ResponsesConnection, body: bytes) -> None:
        self.conn = conn
        self.body: bytes | None = body
        self.status = 0
        self._buffer = b""
        self._error: list[bytes] = []
        self.completed_id = ""
        self.completed_output: list[Any] | None = None

    async def receive(self) -> Message:
        body, self.body = self.body, None
        if body is not None:
            return {"type": "http.request", "body": body, "more_body": False}
        while not self.conn.closed.is_set() and await self.conn.read():
            pass  # a message sent meanwhile waits for its turn
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        """Per chunk of the stream, so kept to the least: the frames are ours (`event: TYPE`
        then `data: {...}`), and `response.completed`, the last event, ends a chunk."""
        if message["type"] == "http.response.start":
            self.status = message["status"]
            return
        chunk: bytes = message.get("body", b"")
        if self.status != 200:
            self._error.append(chunk)
            if not message.get("more_body"):
                await self.conn.frames([_error_frame(self.status, b"".join(self._error))])
            return
        if self._buffer:
            chunk = self._buffer + chunk
        frames = chunk.split(b"\n\n")
        self._buffer = frames.pop()
        payloads = []
        for frame in frames:
            start = frame.find(b"data: ")
            if start >= 0:  # else a comment: the socket has pings of its own
                payloads.append(frame[start + 6 :])
        if not payloads:
            return
        if frames[-1].startswith(b"event: response.completed\n"):
            self._completed(payloads[-1])
        await self.conn.frames(payloads)

    def _completed(self, data: bytes) -> None:
        """The completed response's output, kept for the connection."""
        response = orjson.loads(data).get("response") or {}
        self.completed_id = response.get("id", "")
        self.completed_output = list(response.get("output") or [])


responses_socket = AsgiHandler(_socket)
