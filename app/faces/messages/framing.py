"""Stream encoders for the Messages API: named SSE events (`event: TYPE` then `data: {...}`,
which the Anthropic SDKs dispatch on), `event: error` for a failure after the stream began,
and no `message_stop` then."""

from __future__ import annotations

from collections.abc import Callable

from app.errors import ProxyError
from app.faces.messages.errors import anthropic_error_json
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.messages.thread import Event, MessageFold
from app.sse import named_event_frame
from app.translators.base import Chunk


def error_frame(error: ProxyError, redact: Callable[[str], str]) -> bytes:
    return b"event: error\ndata: " + anthropic_error_json(error, redact) + b"\n\n"


class MessagesEncoder:
    """A translated stream: our chunks through the writer, then framed (and folded into the
    message they make, when the answer is to be kept)."""

    __slots__ = ("_end", "_fold", "_writer")

    def __init__(self, writer: MessagesStreamWriter, fold: MessageFold | None = None) -> None:
        self._writer = writer
        self._fold = fold
        self._end: bytes | None = None

    def encode(self, chunks: list[Chunk]) -> bytes:
        return self._sent(self._writer.feed(chunks))

    def settle(self) -> None:
        """Writes the end (the live call's stop, the calls held after it, `message_stop`) so
        that the fold holds the whole message before it is kept, ahead of `end`."""
        if self._end is None:
            self._end = self._sent(self._writer.finish())

    def end(self) -> bytes:
        self.settle()
        assert self._end is not None
        return self._end

    def _sent(self, events: list[Event]) -> bytes:
        """Every event the client gets is folded, those of the end included (the live call's
        stop, the calls held after it): the kept turn is what the client was sent."""
        if self._fold is not None:
            self._fold.feed(events)
        return b"".join([named_event_frame(event) for event in events])

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
