"""Stream encoders for the Responses API: named SSE events (`event: TYPE` then `data: {...}`),
no `[DONE]`, and a failure after the stream began as one `response.failed` event (Codex reads
`response.failed`'s error and ignores a bare `error` event; the openai SDK raises on a chat
style `data: {"error": ...}` frame)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import ProxyError
from app.faces.responses.stream import ResponsesStreamWriter
from app.sse import named_event_frame
from app.translators.base import Chunk


def failure_code(error: ProxyError) -> str:
    """A `response.failed` error code, from the closed list OpenAI's spec allows there (the
    message says what happened). Codex waits on `rate_limit_exceeded` and retries the rest
    alike, so mapping ours (`upstream_timeout`, `invalid_tool_call`...) to `server_error`
    changes nothing for it, while a client generated from the spec can read the event."""
    if error.status == 429:
        return "rate_limit_exceeded"
    return "server_error"


class ResponsesEncoder:
    """A translated stream: our chunks through the writer, then framed."""

    __slots__ = ("writer",)

    def __init__(self, writer: ResponsesStreamWriter) -> None:
        self.writer = writer

    def encode(self, chunks: list[Chunk]) -> bytes:
        return b"".join([named_event_frame(event) for event in self.writer.feed(chunks)])

    def end(self) -> bytes:
        return b"".join([named_event_frame(event) for event in self.writer.finish()])

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        events = self.writer.failed(failure_code(error), redact(error.message))
        return b"".join([named_event_frame(event) for event in events])


class NativeEncoder:
    """A native upstream's own events, framed again as they came. A failure of the relay
    itself (the upstream went silent or broke off) becomes a `response.failed` for the
    response the upstream had announced."""

    __slots__ = ("_response", "_sequence")

    def __init__(self) -> None:
        self._response: dict[str, Any] = {"id": "resp_unknown", "object": "response"}
        self._sequence = 0

    def encode(self, chunks: list[Chunk]) -> bytes:
        for event in chunks:
            self._sequence = event.get("sequence_number", self._sequence)
            if event.get("type") == "response.created" and isinstance(event.get("response"), dict):
                self._response = event["response"]
        return b"".join([named_event_frame(event) for event in chunks])

    def end(self) -> bytes:
        return b""

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        response = {**self._response, "status": "failed"}
        response["error"] = {"code": failure_code(error), "message": redact(error.message)}
        event = {"type": "response.failed", "sequence_number": self._sequence + 1}
        return named_event_frame({**event, "response": response})
