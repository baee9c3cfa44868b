"""OpenAI's embeddings answer, built once for every kind that translates one (gemini, demo):
the list shape, the configured model name, usage (an estimate where the upstream gives none),
and `encoding_format: "base64"` honoured as little-endian float32, which the openai SDK asks
for by default (CONTRACT.md, "Other OpenAI endpoints")."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from typing import Any

from app.errors import InvalidRequest

CHARS_PER_TOKEN = 4


def embedding_inputs(body: dict[str, Any], kind: str) -> list[str]:
    """`input` as a list of texts; token arrays only an OpenAI-compatible upstream reads."""
    given = body.get("input")
    if isinstance(given, str):
        given = [given]
    if not isinstance(given, list) or not given:
        raise InvalidRequest("input: a string or a non-empty list of strings", param="input")
    if not all(isinstance(text, str) for text in given):
        raise InvalidRequest(
            f"input: {kind} upstreams take strings only (not token arrays)", param="input"
        )
    return given


def dimensions(body: dict[str, Any]) -> int | None:
    wanted = body.get("dimensions")
    if wanted is None:
        return None
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1:
        raise InvalidRequest("dimensions: an integer >= 1", param="dimensions")
    return wanted


def encoding(body: dict[str, Any]) -> str:
    chosen = body.get("encoding_format") or "float"
    if chosen not in ("float", "base64"):
        raise InvalidRequest("encoding_format: 'float' or 'base64'", param="encoding_format")
    return str(chosen)


def encoded(vector: Sequence[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "float":
        return list(vector)
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def estimated_tokens(texts: Sequence[str]) -> int:
    return sum(math.ceil(len(text) / CHARS_PER_TOKEN) for text in texts)


def embeddings_answer(
    vectors: Sequence[Sequence[float]],
    model: str,
    encoding_format: str,
    prompt_tokens: int,
) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": index, "embedding": encoded(vector, encoding_format)}
        for index, vector in enumerate(vectors)
    ]
    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}
