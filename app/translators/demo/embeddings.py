"""The demo kind's embeddings: deterministic vectors with no network (the same text, the same
vector), so the README's first run can show retrieval too. Each vector is unit length and
built from the text's words, so texts that share words point the same way (a search over them
finds something, unlike random vectors). A token-id array (LangChain's default) is embedded
the same way, each id a word: it needs no text, so the demo takes what a client sends."""

from __future__ import annotations

import hashlib
import math

import orjson

from app.errors import InvalidRequest
from app.translators.embeddings import (
    EmbeddingInput,
    dimensions,
    embedding_inputs,
    embeddings_answer,
    encoding,
    estimated_tokens,
)

DEFAULT_DIMENSIONS = 256
JSON = "application/json"


def vector(item: EmbeddingInput, size: int) -> list[float]:
    """A sum of one pseudo-random direction per word (per id of a token-id array),
    normalised."""
    words = item.lower().split() if isinstance(item, str) else [f"#{id_}" for id_ in item]
    values = [0.0] * size
    for word in words or [""]:
        direction = hashlib.shake_256(word.encode()).digest(size)
        values = [value + byte - 127.5 for value, byte in zip(values, direction, strict=True)]
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return [value / norm for value in values]


def serve_embeddings(body: bytes) -> tuple[int, str, list[bytes]]:
    """The demo upstream for POST /embeddings: an OpenAI answer, or a 400 in OpenAI's shape."""
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _refusal("The body is not valid JSON.", None)
    try:
        inputs = embedding_inputs(request)
        size = dimensions(request) or DEFAULT_DIMENSIONS
        encoding_format = encoding(request)
    except InvalidRequest as refused:
        return _refusal(refused.message, refused.param)
    vectors = [vector(item, size) for item in inputs]
    answer = embeddings_answer(
        vectors, str(request.get("model")), encoding_format, estimated_tokens(inputs)
    )
    return 200, JSON, [orjson.dumps(answer)]


def _refusal(message: str, param: str | None) -> tuple[int, str, list[bytes]]:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    return 400, JSON, [orjson.dumps({"error": error})]
