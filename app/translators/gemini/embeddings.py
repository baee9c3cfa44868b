"""POST /v1/embeddings to Gemini: `batchEmbedContents` (`POST {base_url}/v1beta/models/
{model}:batchEmbedContents`), one request per input text in order, `dimensions` as
`outputDimensionality`; its `embeddings[].values` back in OpenAI's list shape, in the same
order. Gemini reports no token count for embeddings, so usage is an estimate."""

from __future__ import annotations

from typing import Any

import orjson

from app.errors import UpstreamProtocolError
from app.openai_types import ChatRequest
from app.translators.base import (
    NativeRequest,
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
    load_json_object,
)
from app.translators.embeddings import (
    dimensions,
    embedding_inputs,
    embeddings_answer,
    encoding,
    estimated_tokens,
    texts_only,
)
from app.translators.gemini.errors import parse_error
from app.translators.gemini.request import gemini_headers
from app.translators.gemini.stream import GeminiStream


def batch_embeddings(native: NativeRequest) -> Translator:
    texts = texts_only(embedding_inputs(native.body), "gemini")
    size = dimensions(native.body)
    wanted = encoding(native.body)

    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        model = f"models/{target.upstream_model}"
        requests: list[dict[str, Any]] = []
        for text in texts:
            one: dict[str, Any] = {"model": model, "content": {"parts": [{"text": text}]}}
            if size is not None:
                one["outputDimensionality"] = size
            requests.append(one)
        provider = target.provider
        return UpstreamRequest(
            url=f"{provider.base_url}/v1beta/{model}:batchEmbedContents",
            headers=gemini_headers(provider),
            body=orjson.dumps({"requests": requests}),
            stream=False,
        )

    def parse_response(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
        gemini_answer = load_json_object(upstream_body, "an answer")
        embeddings = gemini_answer.get("embeddings")
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            raise UpstreamProtocolError("The upstream did not embed every input.")
        vectors = [_values(embedding) for embedding in embeddings]
        return embeddings_answer(vectors, ctx.model, wanted, estimated_tokens(texts))

    return Translator(
        build_request=build_request,
        parse_response=parse_response,
        parse_error=parse_error,
        stream=GeminiStream,
    )


def _values(embedding: Any) -> list[float]:
    values = embedding.get("values") if isinstance(embedding, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, int | float) for v in values):
        raise UpstreamProtocolError("The upstream sent an embedding without its values.")
    return values
