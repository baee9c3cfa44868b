"""The embeddings endpoint in dispatch (app/routing/face.py's Face): every attempt goes to the
kind's own embeddings translator (OpenAI-compatible: relayed; gemini: batchEmbedContents;
demo: offline vectors), so retries, fallbacks, keys, limits, metrics and logs are chat's; a
kind without embeddings is a 400 naming the model and its kind."""

from __future__ import annotations

from typing import Any

from app.errors import InvalidRequest
from app.openai_types import ChatRequest
from app.sse import StreamEncoder
from app.translators.base import NativeRequest, ResponseContext, Target, Translator


def no_embeddings(model: str, provider_name: str, kind: str) -> InvalidRequest:
    return InvalidRequest(
        f"The model '{model}' is served by the {kind} provider '{provider_name}', which has "
        "no embeddings.",
        param="model",
    )


class EmbeddingsFace:
    __slots__ = ("_request",)

    def __init__(self, request: NativeRequest) -> None:
        self._request = request

    def native(self, translator: Translator, target: Target) -> Translator | None:
        if translator.embeddings is None:
            raise no_embeddings(target.model_name, target.provider_name, target.provider.kind)
        return translator.embeddings(self._request)

    def stream_done(self) -> None:
        return None

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        raise AssertionError("embeddings are never translated as chat")

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        raise AssertionError("embeddings are never streamed")

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return completion
