"""A mock LLM upstream that costs next to nothing per request.

Serves OpenAI `POST .../chat/completions`, Anthropic `POST .../messages` and Bedrock's Converse
`POST /model/{modelId}/converse` and `/converse-stream` (binary application/vnd.amazon.eventstream
frames), stream and non-stream, always with the answer in bench/payload.py (text preamble + two
parallel tool calls), and OpenAI `POST .../embeddings` with one fixed answer (3 x 1536 values;
base64 when the body asks). Every response is precomputed bytes per (format, stream,
include_usage) for the `--arg-chunks` the server was started with; serving is a dict lookup
and a write. Raw asyncio on uvloop with httptools' parser, HTTP/1.1 keep-alive.

A model id ending in `-nK` (`mock-model-n10`) streams K argument deltas instead. A Bedrock
request must carry the auth its model id names: SigV4 (`Authorization: AWS4-HMAC-SHA256 ...`,
not verified: tests/helpers/mock_bedrock.py does that) for an id containing `sigv4`, else a
Bearer API key; anything else is a 403, so a run measures the signing it says it does.

`--chunk-delay-ms` paces stream events (one write per event, a sleep between them) so a proxy
receives them one by one, as from a real model, rather than in one TCP segment;
`--first-byte-delay-ms` holds every answer back before its first byte.

    python -m bench.mock_upstream --port 18100 --arg-chunks 50 --chunk-delay-ms 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import unquote_to_bytes

import httptools
import orjson
import uvloop

from bench import mock_bodies
from bench.payload import Format

_STREAM = re.compile(rb'"stream"\s*:\s*true')
_INCLUDE_USAGE = re.compile(rb'"include_usage"\s*:\s*true')
_MODEL_CHUNKS = re.compile(rb'"model"\s*:\s*"[^"]*-n([1-9][0-9]{0,3})"')
_REQUIRED: dict[Format, tuple[bytes, ...]] = {
    "openai": (b'"messages"', b'"tools"'),
    "anthropic": (b'"messages"', b'"max_tokens"', b'"input_schema"'),
    "bedrock": (b'"messages"', b'"toolConfig"', b'"inputSchema"'),
}
_BEDROCK_ROUTE = re.compile(rb"/model/([^/?]+)/(converse-stream|converse)(?:\?|$)")
_ID_CHUNKS = re.compile(rb"-n([1-9][0-9]{0,3})$")
EVENTSTREAM = "application/vnd.amazon.eventstream"
_LAST_CHUNK = b"0\r\n\r\n"
_BASE64 = re.compile(rb'"encoding_format"\s*:\s*"base64"')


@dataclass(frozen=True, slots=True)
class Answer:
    head: bytes  # status line and headers
    frames: tuple[bytes, ...]  # the body, one HTTP/1.1 chunk per SSE event (streams)
    whole: bytes  # everything in one write: head + frames + last chunk (or the full body)


def _response(status: int, content_type: str, body: bytes, extra: str = "") -> bytes:
    """`extra`: more header lines, each ending in CRLF."""
    reason = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n{extra}"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _stream_answer(events: list[bytes], content_type: str = "text/event-stream") -> Answer:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()
    frames = tuple(f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events)
    return Answer(head, frames, head + b"".join(frames) + _LAST_CHUNK)


def _plain_answer(raw: bytes) -> Answer:
    return Answer(raw, (), raw)


def build_answer(fmt: Format, stream: bool, usage: bool, arg_chunks: int) -> Answer:
    if not stream:
        body = {
            "openai": mock_bodies.openai_body,
            "anthropic": mock_bodies.anthropic_body,
            "bedrock": mock_bodies.bedrock_body,
        }[fmt]()
        return _plain_answer(_response(200, "application/json", body))
    if fmt == "bedrock":
        return _stream_answer(mock_bodies.bedrock_events(arg_chunks), EVENTSTREAM)
    if fmt == "openai":
        return _stream_answer(mock_bodies.openai_events(arg_chunks, include_usage=usage))
    return _stream_answer(mock_bodies.anthropic_events(arg_chunks))


class Answers:
    """Every answer, built once: by (format, stream, include_usage, argument deltas). A model
    id ending in `-nK` (e.g. `mock-model-n10`) asks for K deltas instead of the default."""

    MAX_CHUNKS = 2000

    def __init__(self, default_chunks: int) -> None:
        self.default_chunks = default_chunks
        self._built: dict[tuple[Format, bool, bool, int], Answer] = {}
        for fmt in ("openai", "anthropic", "bedrock"):
            for stream, usage in ((False, False), (True, False), (True, True)):
                self.get(fmt, stream, usage, default_chunks)

    def get(self, fmt: Format, stream: bool, usage: bool, arg_chunks: int) -> Answer:
        key = (fmt, stream, usage and stream and fmt == "openai", arg_chunks if stream else 0)
        answer = self._built.get(key)
        if answer is None:
            answer = self._built[key] = build_answer(fmt, stream, key[2], arg_chunks)
        return answer

    def chunks(self, body: bytes) -> int:
        found = _MODEL_CHUNKS.search(body)
        return min(int(found[1]), self.MAX_CHUNKS) if found else self.default_chunks

    def chunks_of_id(self, model_id: bytes) -> int:
        """The same, from a Bedrock model id (it is in the path, not the body)."""
        found = _ID_CHUNKS.search(model_id)
        return min(int(found[1]), self.MAX_CHUNKS) if found else self.default_chunks


@dataclass(frozen=True, slots=True)
class Settings:
    answers: Answers
    chunk_delay: float  # seconds between stream events
    first_byte_delay: float  # seconds before any answer's first byte


HEALTH = _response(200, "application/json", b'{"status":"ok"}')
EMBEDDINGS = {
    packed: _response(200, "application/json", mock_bodies.embeddings_body(packed=packed))
    for packed in (False, True)
}
NOT_FOUND = _response(404, "application/json", b'{"error":{"message":"no such path"}}')


def _bad_request(fmt: Format, missing: bytes) -> bytes:
    message = f"mock upstream: request body has no {missing.decode()}"
    if fmt == "bedrock":
        return _bedrock_error(400, "ValidationException", message)
    error = {"type": "invalid_request_error", "message": message}
    body = {"type": "error", "error": error} if fmt == "anthropic" else {"error": error}
    return _response(400, "application/json", orjson.dumps(body))


def _bedrock_error(status: int, error_type: str, message: str) -> bytes:
    """Bedrock's error shape: the type in x-amzn-errortype, the message in the body."""
    body = orjson.dumps({"message": message})
    return _response(status, "application/json", body, f"x-amzn-errortype: {error_type}\r\n")


def _route(path: bytes) -> Format | Literal["embeddings"] | None:
    path = path.split(b"?", 1)[0]
    if path.endswith(b"/embeddings"):
        return "embeddings"
    if path.endswith(b"/chat/completions"):
        return "openai"
    if path.endswith(b"/messages"):
        return "anthropic"
    if path.endswith((b"/converse", b"/converse-stream")):
        return "bedrock"
    return None


class MockProtocol(asyncio.Protocol):
    """One client connection: parse requests, write precomputed answers."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._body: list[bytes] = []
        self._authorization = b""
        self._closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._write(_response(400, "text/plain", b"bad request"), keep_alive=False)

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._url = b""
        self._body = []
        self._authorization = b""

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"authorization":
            self._authorization = value

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        keep_alive = self._parser.should_keep_alive()
        method = self._parser.get_method()
        fmt = _route(self._url)
        if method == b"GET":
            self._write(HEALTH, keep_alive)
        elif method != b"POST" or fmt is None:
            self._write(NOT_FOUND, keep_alive)
        elif fmt == "embeddings":
            self._embeddings(b"".join(self._body), keep_alive)
        elif fmt == "bedrock":
            self._bedrock(b"".join(self._body), keep_alive)
        else:
            self._answer(fmt, b"".join(self._body), keep_alive)

    def _embeddings(self, body: bytes, keep_alive: bool) -> None:
        """The fixed embeddings answer, floats or base64 as asked; never paced (no stream)."""
        if b'"input"' not in body:
            self._write(_bad_request("openai", b'"input"'), keep_alive)
            return
        self._write(EMBEDDINGS[_BASE64.search(body) is not None], keep_alive)

    def _answer(self, fmt: Format, body: bytes, keep_alive: bool) -> None:
        for needle in _REQUIRED[fmt]:
            if needle not in body:
                self._write(_bad_request(fmt, needle), keep_alive)
                return
        stream = _STREAM.search(body) is not None
        usage = stream and _INCLUDE_USAGE.search(body) is not None
        answers = self._settings.answers
        answer = answers.get(fmt, stream, usage, answers.chunks(body) if stream else 0)
        self._send(answer, stream, keep_alive)

    def _bedrock(self, body: bytes, keep_alive: bool) -> None:
        """Converse or ConverseStream by the path; the model id (one percent-encoded segment)
        says the stream's length and the auth it must come with."""
        route = _BEDROCK_ROUTE.search(self._url)
        if route is None:
            self._write(NOT_FOUND, keep_alive)
            return
        model_id = unquote_to_bytes(route[1])
        scheme = b"AWS4-HMAC-SHA256 " if b"sigv4" in model_id else b"Bearer "
        if not self._authorization.startswith(scheme):
            message = f"mock upstream: {model_id.decode()} takes {scheme.decode().strip()} auth"
            self._write(_bedrock_error(403, "AccessDeniedException", message), keep_alive)
            return
        for needle in _REQUIRED["bedrock"]:
            if needle not in body:
                self._write(_bad_request("bedrock", needle), keep_alive)
                return
        stream = route[2] == b"converse-stream"
        answers = self._settings.answers
        chunks = answers.chunks_of_id(model_id) if stream else 0
        self._send(answers.get("bedrock", stream, False, chunks), stream, keep_alive)

    def _send(self, answer: Answer, stream: bool, keep_alive: bool) -> None:
        delay = self._settings.chunk_delay if stream else 0.0
        if delay > 0 or self._settings.first_byte_delay > 0:
            assert self._transport is not None
            self._transport.pause_reading()  # no pipelining while this answer is under way
            _Paced(self, answer, keep_alive, delay).start(self._settings.first_byte_delay)
        else:
            self._write(answer.whole, keep_alive)

    @property
    def closed(self) -> bool:
        return self._closed

    def write_frame(self, frame: bytes) -> None:
        assert self._transport is not None
        self._transport.write(frame)

    def finish(self, data: bytes, keep_alive: bool) -> None:
        """The last write of a paced answer; then the next request may be read."""
        self._write(data, keep_alive)
        if not self._closed and self._transport is not None:
            self._transport.resume_reading()

    def _write(self, data: bytes, keep_alive: bool) -> None:
        if self._closed or self._transport is None:
            return
        self._transport.write(data)
        if not keep_alive:
            self._transport.close()


class _Paced:
    """Writes one answer a frame at a time, `delay` apart, on loop timers (no task per answer:
    the mock's cost per event stays a timer and a write)."""

    def __init__(self, protocol: MockProtocol, answer: Answer, keep_alive: bool, delay: float):
        self._protocol = protocol
        self._answer = answer
        self._keep_alive = keep_alive
        self._delay = delay
        self._next = 0
        self._loop = asyncio.get_running_loop()

    def start(self, first_byte_delay: float) -> None:
        if first_byte_delay > 0:
            self._loop.call_later(first_byte_delay, self._write_next)
        else:
            self._write_next()

    def _write_next(self) -> None:
        protocol, answer = self._protocol, self._answer
        if protocol.closed:
            return
        if self._delay <= 0 or not answer.frames:  # only the first byte was held back
            protocol.finish(answer.whole, self._keep_alive)
            return
        frame = answer.frames[self._next]
        self._next += 1
        if self._next == 1:
            frame = answer.head + frame
        if self._next == len(answer.frames):
            protocol.finish(frame + _LAST_CHUNK, self._keep_alive)
            return
        protocol.write_frame(frame)
        self._loop.call_later(self._delay, self._write_next)


async def serve(host: str, port: int, settings: Settings) -> None:
    if not ipaddress.ip_address(host).is_loopback:
        raise SystemExit("the mock upstream only listens on a loopback address")
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: MockProtocol(settings), host, port, backlog=1024)
    print(f"mock upstream listening on http://{host}:{port}", flush=True)  # noqa: T201
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="mock_upstream", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18100)
    parser.add_argument("--arg-chunks", type=int, default=50, help="argument deltas per stream")
    parser.add_argument("--chunk-delay-ms", type=float, default=0.0)
    parser.add_argument("--first-byte-delay-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    settings = Settings(
        answers=Answers(args.arg_chunks),
        chunk_delay=args.chunk_delay_ms / 1000,
        first_byte_delay=args.first_byte_delay_ms / 1000,
    )
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(serve(args.host, args.port, settings))


if __name__ == "__main__":
    main()
