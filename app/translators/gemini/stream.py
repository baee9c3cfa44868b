"""Gemini's `streamGenerateContent?alt=sse` frames -> `chat.completion.chunk`s (PROTOCOLS C.5).

Each frame is a whole GenerateContentResponse holding only what is new: text as deltas,
function calls whole (several per frame, or one per frame), `finishReason` on the last frame
or in a later, otherwise empty one, `usageMetadata` cumulative on nearly every frame.
"""

from __future__ import annotations

from typing import Any

from app.errors import UpstreamProtocolError
from app.openai_types import FinishReason
from app.sse import SSEEvent
from app.translators.base import Chunk, ResponseContext, load_json_object
from app.translators.chunks import ChunkBuilder
from app.translators.gemini.errors import stream_error
from app.translators.gemini.ids import call_id, response_nonce
from app.translators.gemini.response import (
    CandidateParts,
    finish_reason,
    first_candidate,
    malformed_call_error,
    openai_usage,
    prompt_blocked,
)


class GeminiStream:
    """Gemini SSE frames -> OpenAI chunks.

    State: whether a chunk has gone out (the role chunk goes with the first one, so a stream
    whose first frame is an error still gets a real status); the candidate's parts read so
    far, whose calls are held until the turn ends (CandidateParts says why) and then sent
    with indexes 0..n-1 counted over the whole stream, each as a first delta with id and name
    and a second with all its arguments, as OpenAI streams them; whether the finish came;
    the last usage seen.
    """

    __slots__ = (
        "_builder",
        "_ctx",
        "_finished",
        "_include_usage",
        "_nonce",
        "_parts",
        "_started",
        "_usage",
    )

    def __init__(self, ctx: ResponseContext) -> None:
        self._ctx = ctx
        self._builder = ChunkBuilder(ctx.completion_id, ctx.created, ctx.model)
        self._include_usage = ctx.include_usage
        self._nonce = response_nonce(ctx.completion_id)
        self._parts = CandidateParts()
        self._started = False
        self._finished = False
        self._usage: Any = None

    def feed(self, event: SSEEvent) -> list[Chunk]:
        """Chunks for one frame. An error frame raises (see stream_error); frames after the
        finish only update the usage."""
        gemini_frame = load_json_object(event.data, "a stream event")
        if "error" in gemini_frame:
            raise stream_error(gemini_frame["error"], self._started)
        if gemini_frame.get("usageMetadata") is not None:
            self._usage = gemini_frame["usageMetadata"]
        if self._finished:
            return []
        candidate = first_candidate(gemini_frame)
        if candidate is None:
            blocked = prompt_blocked(gemini_frame)
            return self._send([self._finish("content_filter")] if blocked else [])
        chunks = [
            self._builder.content(text) if kind == "content" else self._builder.reasoning(text)
            for kind, text in self._parts.read(candidate)
        ]
        if candidate.get("finishReason") is not None:
            error = malformed_call_error(candidate, self._started)
            if error is not None:
                raise error
            chunks += self._calls_and_finish(candidate["finishReason"])
        return self._send(chunks)

    def finish(self) -> list[Chunk]:
        """The usage chunk, if the client asked for it. A stream that ended without a
        finishReason was cut short (transcript truncated_stream)."""
        if not self._finished:
            raise UpstreamProtocolError("the gemini stream ended before its finishReason")
        if not self._include_usage:
            return []
        return [self._builder.usage(openai_usage(self._usage))]

    def usage(self) -> dict[str, Any] | None:
        return None if self._usage is None else dict(openai_usage(self._usage))

    def _calls_and_finish(self, gemini_reason: Any) -> list[Chunk]:
        calls = self._parts.finished_calls(self._ctx)
        chunks: list[Chunk] = []
        for index, call in enumerate(calls):
            openai_id = call_id(self._nonce, index, call.signature)
            chunks.append(self._builder.tool_call_start(index, openai_id, call.name))
            chunks.append(self._builder.tool_call_arguments(index, call.arguments))
        chunks.append(self._finish(finish_reason(gemini_reason, bool(calls))))
        return chunks

    def _finish(self, reason: FinishReason) -> Chunk:
        self._finished = True
        return self._builder.finish(reason)

    def _send(self, chunks: list[Chunk]) -> list[Chunk]:
        """The role chunk first, once: the OpenAI Node SDK's stream helper needs it."""
        if chunks and not self._started:
            self._started = True
            chunks.insert(0, self._builder.role())
        return chunks
