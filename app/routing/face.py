"""What a client-facing API changes in dispatch. Every request is a ChatRequest by the time it
is routed, so retries, fallbacks, timeouts and the per-kind translators are shared; a face only
decides how an attempt's answer is put back into its own wire format, and whether a kind that
speaks that format natively is given the client's request as it came."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from app.openai_types import ChatRequest
from app.sse import OPENAI_ENCODER, StreamEncoder
from app.translators.base import ResponseContext, Target, Translator


class Face(Protocol):
    def native(self, translator: Translator, target: Target) -> Translator | None:
        """A translator that relays the client's own request and answer untouched, when the
        upstream speaks this face's API; None to translate as usual."""
        ...

    def stream_done(self) -> Callable[[], Awaitable[None]] | None:
        """Awaited once a translated stream has ended well, before its last frames go out
        (a face that keeps the answer, such as stored responses, saves it here)."""
        ...

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        """The request as this face sends it to one deployment (limits that depend on it)."""
        ...

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        """How one stream's chunks (a native translator's: the upstream's own events) are
        framed for the client."""
        ...

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        """A translated non-stream answer in this face's shape."""
        ...


class OpenAIFace:
    """Chat Completions: our canonical shape, so nothing changes."""

    __slots__ = ()

    def native(self, translator: Translator, target: Target) -> Translator | None:
        return None

    def stream_done(self) -> None:
        return None

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        return chat_request

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        return OPENAI_ENCODER

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return completion


OPENAI_FACE = OpenAIFace()
