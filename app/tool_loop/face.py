"""The Face (app/routing/face.py) each round of the loop is dispatched with: never native (the
loop needs chat answers), the Responses face's output cap, and for a stream one encoder per
round over the response's one writer, which marks the loop failed when a round ends in an
error event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import ProxyError
from app.faces.output_cap import capped
from app.faces.responses.framing import failure_code
from app.openai_types import ChatRequest
from app.sse import named_event_frame
from app.tool_loop.writer import LoopWriter
from app.translators.base import Chunk, ResponseContext, Target, Translator


def framed(events: list[dict[str, Any]]) -> bytes:
    return b"".join([named_event_frame(event) for event in events])


class RoundEncoder:
    """One round's chunks through the response's writer."""

    __slots__ = ("_face", "_writer")

    def __init__(self, face: LoopFace, writer: LoopWriter) -> None:
        self._face = face
        self._writer = writer

    def encode(self, chunks: list[Chunk]) -> bytes:
        self._face.fold(chunks)
        return framed(self._writer.feed(chunks))

    def end(self) -> bytes:
        return framed(self._writer.end_round())

    def error(self, error: ProxyError, redact: Callable[[str], str]) -> bytes:
        self._face.failed = True
        return framed(self._writer.failed(failure_code(error), redact(error.message)))


class LoopFace:
    __slots__ = ("_blocks", "_text", "failed", "writer")

    def __init__(self, writer: LoopWriter | None) -> None:
        self.writer = writer  # None: a non-stream loop
        self.failed = False
        self._text: list[str] = []
        self._blocks: list[dict[str, Any]] = []

    def fold(self, chunks: list[Chunk]) -> None:
        """Keeps the round's text and thinking blocks: the model's turn in the next round."""
        for chunk in chunks:
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    self._text.append(delta["content"])
                if delta.get("thinking_blocks"):
                    self._blocks += delta["thinking_blocks"]

    def take_message(self) -> dict[str, Any]:
        message = {"content": "".join(self._text) or None, "thinking_blocks": self._blocks}
        self._text, self._blocks = [], []
        return message

    def native(self, translator: Translator, target: Target) -> Translator | None:
        return None

    def stream_done(self) -> None:
        return None

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        return capped(chat_request, target)

    def encoder(self, ctx: ResponseContext, *, native: bool) -> RoundEncoder:
        assert self.writer is not None
        return RoundEncoder(self, self.writer)

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return completion
