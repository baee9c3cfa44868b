"""The Messages API face in dispatch (app/routing/face.py's Face): a kind that speaks it gets
the client's request as it came; every other kind gets the translated chat request, with
`max_tokens` lowered to the model's `max_output_tokens`, and its answer and chunks turned
into Anthropic's message and events."""

from __future__ import annotations

from typing import Any

from app.errors import ProxyError
from app.faces.messages.framing import NATIVE_ENCODER, MessagesEncoder
from app.faces.messages.response import anthropic_message, message_id
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.output_cap import capped
from app.openai_types import ChatRequest
from app.sse import StreamEncoder
from app.translators.base import NativeRequest, ResponseContext, Target, Translator


class MessagesFace:
    __slots__ = ("_refusal", "_request")

    def __init__(self, request: NativeRequest) -> None:
        self._request = request
        self._refusal: ProxyError | None = None

    def refuse_translation(self, refusal: ProxyError) -> None:
        """The request could not be translated: only a kind that takes it natively can
        serve it; any other raises `refusal`."""
        self._refusal = refusal

    def native(self, translator: Translator, target: Target) -> Translator | None:
        return translator.native(self._request) if translator.native is not None else None

    def stream_done(self) -> None:
        return None

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        if self._refusal is not None:
            raise self._refusal
        return capped(chat_request, target)

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        if native:
            return NATIVE_ENCODER
        return MessagesEncoder(MessagesStreamWriter(message_id(ctx.completion_id), ctx.model))

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return anthropic_message(completion)
