"""Stream encoders for the Messages API: named SSE events (`event: TYPE` then `data: {...}`,
which the Anthropic SDKs dispatch on), `event: error` for a failure after the stream began,
and no `message_stop` then."""

from __future__ import annotations

from collections.abc import Callable

from app.errors import ProxyError
from app.faces.messages.errors import anthropic_error_json
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.messages.thread import MessageFold
from app.sse import named_event_frame
from app.translators.base import Chunk


def error_frame(error: ProxyError, redact: Callable[[str], str]) -> bytes:
    return b"event: error\ndata: " + anthropic_error_json(error, redact) + b"\n\n"


class MessagesEncoder:
    """A translated stream: our chunks through the writer, then framed (and folded into the
    message they make, when the answer is to be kept)."""

    __slots__ = ("_fold", "_writer")

    def __init__(self, writer: MessagesStreamWriter, fold: MessageFold | None = None) -> None:
        self._writer = writer
        self._fold = fold

    def encode(self, chunks: list[Chunk]) -> bytes:
        events = self._writer.feed(chunks)
        if self._fold is not None:
            self._fold.feed(events)
        return b"".join([named_event_frame(event) for event in events])

    def end(self) -> bytes:
        return b"".join([named_event_frame(event) for event in self._writer.finish()])

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        return error_frame(error, redact)


class NativeEncoder:
    """An anthropic upstream's own events, framed again as they came."""

    __slots__ = ()

    def encode(self, chunks: list[Chunk]) -> bytes:
        return b"".join([named_event_frame(event) for event in chunks])

    def end(self) -> bytes:
        return b""

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        return error_frame(error, redact)


NATIVE_ENCODER = NativeEncoder()
