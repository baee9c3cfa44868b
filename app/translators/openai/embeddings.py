"""POST /v1/embeddings to an OpenAI-compatible upstream (`{base_url}/embeddings`): the body as
the client sent it, only `model` replaced; the answer with the configured model name, usage
estimated where the server gives none, and base64 made here when a server answered floats to a
client that asked for base64 (some compatible servers ignore `encoding_format`)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from app.openai_types import ChatRequest
from app.translators.base import (
    NativeRequest,
    RelayedJSON,
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
MODEL_VALUE = re.compile(rb'"model"\s*:\s*"(?:[^"\\]|\\.)*"')
USAGE = re.compile(rb'"usage"\s*:\s*(\{[^{}]*\})')
FLOAT_VECTOR = re.compile(rb'"embedding"\s*:\s*\[')


def as_relayed(upstream_body: bytes, model: str, wanted: str) -> RelayedJSON | None:
    """The common answer relayed as its bytes with only `model` replaced, when the top-level
    `model` and `usage` are found outside the vectors (before the `data` key or after the
    array's last `]`, where nothing else is nested) and the vectors are already in the
    encoding asked for. Anything else (None) is parsed and rebuilt. Only the short stretches
    outside the vectors are searched: a scan of 100 kB of floats costs what a parse does."""
    data_key = upstream_body.find(b'"data"')
    last_bracket = upstream_body.rfind(b"]")
    if data_key < 0 or last_bracket < data_key:
        return None
    model_value = _outside(MODEL_VALUE, b'"model"', upstream_body, data_key, last_bracket)
    usage = _outside(USAGE, b'"usage"', upstream_body, data_key, last_bracket)
    if model_value is None or usage is None:
        return None
    if wanted == "base64" and FLOAT_VECTOR.search(upstream_body):
        return None
    try:
        read = {"usage": orjson.loads(usage.group(1))}
    except orjson.JSONDecodeError:
        return None
    start, end = model_value.span()
    patched = upstream_body[:start] + b'"model":' + orjson.dumps(model) + upstream_body[end:]
    return RelayedJSON(patched, read)


def _outside(
    pattern: re.Pattern[bytes], key: bytes, body: bytes, data_key: int, last_bracket: int
) -> re.Match[bytes] | None:
    """The key's match before `data` or after the vectors, when it stands there exactly once
    (twice would mean something nested holds it too: not ours to guess which)."""
    if body.count(key, 0, data_key) + body.count(key, last_bracket) != 1:
        return None
    return pattern.match(body, max(body.find(key, 0, data_key), body.find(key, last_bracket)))


def embeddings_passthrough(native: NativeRequest) -> Translator:
    wanted = encoding(native.body)

    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        headers = {"content-type": "application/json"}
        if target.provider.api_key:
            headers["authorization"] = f"Bearer {target.provider.api_key}"
        return relayed_request(NativeRequest(PATH, native.body, {}), target, headers)

    def parse_response(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
        relayed = as_relayed(upstream_body, ctx.model, wanted)
        if relayed is not None:
            return relayed
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
