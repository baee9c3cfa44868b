"""Sans-IO server-sent events: a byte-level decoder (WHATWG rules), the frames we encode, and
the encoder protocol every client-facing API's stream framing follows (a leaf, so the faces
and the relay both import it without the faces depending on a network module).

Our own decoder rather than httpx's `aiter_lines()`: that splits with `str.splitlines()`, which
also breaks on U+2028/U+0085 inside JSON strings and so corrupts model output (seen with
httpx 0.28.1). Lines here split on CR, LF or CRLF at the byte level only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app.errors import ProxyError, error_json

DONE_FRAME = b"data: [DONE]\n\n"


@dataclass(slots=True)
class SSEEvent:
    data: str
    event: str | None = None
    id: str | None = None


class FrameDecoder(Protocol):
    """What turns an upstream stream's bytes into events, split however they arrive: SSE
    (SSEDecoder) for every kind but those that bring their own framing (Bedrock's binary event
    stream), each of which yields the same SSEEvent (its event type and its payload)."""

    def feed(self, chunk: bytes) -> list[SSEEvent]: ...

    def flush(self) -> list[SSEEvent]:
        """End of stream: what is still buffered, or an UpstreamProtocolError if that is half
        an event the framing cannot end there."""
        ...


class SSEDecoder:
    """Feed it bytes as they arrive, in any split; it returns each event once it is complete."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._pending_cr and chunk.startswith(b"\n"):
            # The LF of a CRLF whose CR ended the previous chunk.
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith(b"\r")
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._buffer = buffer.split(b"\n")
        events: list[SSEEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    @property
    def idle(self) -> bool:
        """Between events: nothing buffered, no event half-read."""
        return not self._buffer and not self._data and not self._pending_cr

    def flush(self) -> list[SSEEvent]:
        """End of stream. The spec drops an event with no closing blank line; we read it, since
        some servers end on `data: [DONE]` with no terminator and nothing is gained by losing it."""
        if self._buffer:
            self._line(self._buffer)
            self._buffer = b""
        event = self._dispatch()
        return [event] if event is not None else []

    def _line(self, line: bytes) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == 0x3A:  # ":" comment (keep-alive)
            return None
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")
        # "retry" and unknown fields are ignored, as the spec says.
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = None
            return None
        event = SSEEvent("\n".join(self._data), self._event, self._id)
        self._data = []
        self._event = None
        return event


def data_frame(payload: bytes) -> bytes:
    """One SSE event carrying an already-serialised JSON payload."""
    return b"data: " + payload + b"\n\n"


def named_event_frame(event: dict[str, Any]) -> bytes:
    """`event: TYPE` then `data: {...}`: how the Messages and Responses APIs frame events (their
    SDKs dispatch on the name)."""
    name: str = event["type"]
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


class StreamEncoder(Protocol):
    """Turns a stream's chunks into the bytes its client reads: the client API's SSE framing,
    its end-of-stream marker and its in-stream error. One per stream (it may keep state)."""

    def encode(self, chunks: list[dict[str, Any]]) -> bytes: ...

    def end(self) -> bytes: ...

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes: ...


class OpenAIEncoder:
    """Chat Completions framing: `data: {chunk}` per chunk, `data: [DONE]` at the end, one
    `data: {"error": ...}` event on failure. Stateless, so one serves every stream."""

    __slots__ = ()

    def encode(self, chunks: list[dict[str, Any]]) -> bytes:
        """One orjson encode per chunk, joined into one write."""
        return b"".join([data_frame(orjson.dumps(chunk)) for chunk in chunks])

    def end(self) -> bytes:
        return DONE_FRAME

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        return data_frame(error_json(error, redact))


OPENAI_ENCODER = OpenAIEncoder()
