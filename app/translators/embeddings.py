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


EmbeddingInput = str | list[int]
"""One thing to embed: a text, or a token-id array (what LangChain's OpenAIEmbeddings sends on
its defaults, having tokenized the text itself)."""

NEEDS_TEXT_HINT = (
    "send strings (LangChain's OpenAIEmbeddings sends token ids unless it is given "
    "check_embedding_ctx_length=False)"
)


def embedding_inputs(body: dict[str, Any]) -> list[EmbeddingInput]:
    """`input` as a list with one text or token-id array per vector, as OpenAI takes it (a
    string, a list of strings, a token-id array, or a list of those); an empty one is a 400
    saying so, whatever the kind."""
    given = body.get("input")
    if given is None:
        raise InvalidRequest("input: Field required (a string or a list)", param="input")
    if isinstance(given, str) or _is_token_array(given):
        given = [given]
    if not isinstance(given, list) or not given:
        raise InvalidRequest("input: the input is empty (an empty list)", param="input")
    for item in given:
        if not isinstance(item, str) and not _is_token_array(item):
            raise InvalidRequest(
                "input: a string, a list of strings, or token-id arrays (lists of integers)",
                param="input",
            )
        if not item:
            raise InvalidRequest(
                "input: the input is empty: give the text (or token ids) to embed",
                param="input",
            )
    return given


def texts_only(inputs: list[EmbeddingInput], kind: str) -> list[str]:
    """The inputs of a kind that embeds text only: token-id arrays are a 400 saying what to
    send instead."""
    texts = [item for item in inputs if isinstance(item, str)]
    if len(texts) != len(inputs):
        raise InvalidRequest(
            f"input: {kind} upstreams embed text, not token-id arrays: {NEEDS_TEXT_HINT}.",
            param="input",
        )
    return texts


def _is_token_array(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(token, int) and not isinstance(token, bool) for token in value
    )


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


def estimated_tokens(inputs: Sequence[EmbeddingInput]) -> int:
    """A token-id array's length; a text's length over CHARS_PER_TOKEN."""
    return sum(
        math.ceil(len(item) / CHARS_PER_TOKEN) if isinstance(item, str) else len(item)
        for item in inputs
    )


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
