"""POST /v1/embeddings to an OpenAI-compatible upstream (`{base_url}/embeddings`): the body as
the client sent it, only `model` replaced; the answer with the configured model name, usage
estimated where the server gives none, and base64 made here when a server answered floats to a
client that asked for base64 (some compatible servers ignore `encoding_format`)."""

from __future__ import annotations

from typing import Any

from app.openai_types import ChatRequest
from app.translators.base import (
    NativeRequest,
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
    relayed_answer,
    relayed_request,
)
from app.translators.embeddings import encoded, encoding, estimated_tokens
from app.translators.openai.response import parse_error
from app.translators.openai.stream import OpenAIStream

PATH = "/embeddings"


def embeddings_passthrough(native: NativeRequest) -> Translator:
    wanted = encoding(native.body)

    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        headers = {"content-type": "application/json"}
        if target.provider.api_key:
            headers["authorization"] = f"Bearer {target.provider.api_key}"
        return relayed_request(NativeRequest(PATH, native.body, {}), target, headers)

    def parse_response(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
        answer = relayed_answer(upstream_body, ctx)
        answer["model"] = ctx.model
        for item in answer.get("data") or ():
            if (
                wanted == "base64"
                and isinstance(item, dict)
                and isinstance(item.get("embedding"), list)
            ):
                item["embedding"] = encoded(item["embedding"], "base64")
        if not isinstance(answer.get("usage"), dict):
            texts = native.body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            count = estimated_tokens([text for text in texts or () if isinstance(text, str)])
            answer["usage"] = {"prompt_tokens": count, "total_tokens": count}
        return answer

    return Translator(
        build_request=build_request,
        parse_response=parse_response,
        parse_error=parse_error,
        stream=OpenAIStream,
    )
