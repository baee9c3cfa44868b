"""The cost of an answer, put where the client reads its usage (CONTRACT.md, "Spend: prices,
cost, budgets"): `usage.cost` in a whole answer and in the stream event that carries the
usage, and `x-toolrelay-cost` on a whole answer. Only a priced model's answers are touched:
an unpriced one's get nothing here, not even a wrapper around its stream."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from app.spend.prices import Price
from app.sse import SSEEvent
from app.translators.base import Chunk, PassCheck, RelayedJSON, StreamTranslator

COST_HEADER = "x-toolrelay-cost"

_RESPONSE_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
"""The Responses API events whose `response` carries the final usage (a native stream)."""


def header_value(cost: float) -> str:
    """USD as a plain decimal (`0.0303`, never `3.03e-02`): a header is read by people too."""
    text = f"{cost:.12f}".rstrip("0").rstrip(".")
    return text or "0"


def price_answer(price: Price, answer: dict[str, Any], headers: dict[str, str]) -> float | None:
    """A whole answer's cost (chat, embeddings, or a native Messages or Responses body: each
    keeps its usage under `usage`), written into that usage and the answer's headers; None
    when the answer has no usage to price."""
    usage = answer.get("usage")
    cost = price.cost(usage)
    if cost is not None and isinstance(usage, dict):
        usage["cost"] = cost
        headers[COST_HEADER] = header_value(cost)
        if isinstance(answer, RelayedJSON):
            _patch_relayed(answer, cost)
    return cost


_USAGE_OBJECT = re.compile(rb'"usage"\s*:\s*\{[^{}]*\}')


def _patch_relayed(answer: RelayedJSON, cost: float) -> None:
    """An answer relayed as the upstream's bytes (embeddings: 100 kB of floats) gets `cost`
    written into its one flat `usage` object in place, not the whole body re-serialised;
    only a body where that object cannot be told apart is parsed and written again."""
    raw, value = answer.raw, orjson.dumps(cost)
    found = _USAGE_OBJECT.search(raw) if raw.count(b'"usage"') == 1 else None
    if found is not None:
        end = found.end() - 1
        comma = b"" if raw[found.start() : end].rstrip().endswith(b"{") else b","
        answer.raw = raw[:end] + comma + b'"cost":' + value + raw[end:]
        return
    whole = orjson.loads(raw)
    if isinstance(whole, dict) and isinstance(whole.get("usage"), dict):
        whole["usage"]["cost"] = cost
        answer.raw = orjson.dumps(whole)


def priced_stream(
    price: Price, wrap: Callable[[StreamTranslator], StreamTranslator] | None
) -> Callable[[StreamTranslator], StreamTranslator]:
    """`wrap` (the attempt's own wrapping: audit, thinking capture) around a PricedStream
    around the kind's translator: the cost goes into the usage before anything else sees it."""

    def wrapped(stream: StreamTranslator) -> StreamTranslator:
        priced = PricedStream(stream, price)
        return priced if wrap is None else wrap(priced)

    return wrapped


class PricedStream:
    """A kind's stream translator whose usage-bearing chunks get `usage.cost`: the chat usage
    chunk (priced on the usage it shows), a native Messages stream's `message_delta` (on the
    whole answer's usage so far: the event shows only the output's) and a native Responses
    stream's final event. Chunks without usage pass as they are, and so does the relay's fast
    path (a usage chunk never takes it: the openai kind sends those the slow way)."""

    __slots__ = ("_inner", "_price")

    def __init__(self, inner: StreamTranslator, price: Price) -> None:
        self._inner = inner
        self._price = price

    def feed(self, event: SSEEvent) -> list[Chunk]:
        chunks = self._inner.feed(event)
        for chunk in chunks:
            if "usage" in chunk or "response" in chunk:
                self._price_chunk(chunk)
        return chunks

    def finish(self) -> list[Chunk]:
        chunks = self._inner.finish()
        for chunk in chunks:
            if "usage" in chunk or "response" in chunk:
                self._price_chunk(chunk)
        return chunks

    def usage(self) -> dict[str, Any] | None:
        return self._inner.usage()

    def fast_path(self) -> PassCheck | None:
        inner = getattr(self._inner, "fast_path", None)
        return None if inner is None else inner()

    def committed(self) -> None:
        committed = getattr(self._inner, "committed", None)
        if committed is not None:
            committed()

    def _price_chunk(self, chunk: Chunk) -> None:
        usage = chunk.get("usage")
        if type(usage) is dict:
            shown = usage if chunk.get("object") == "chat.completion.chunk" else None
            cost = self._price.cost(self._inner.usage() if shown is None else shown)
        elif chunk.get("type") in _RESPONSE_ENDS and type(chunk.get("response")) is dict:
            usage = chunk["response"].get("usage")
            cost = self._price.cost(usage)
        else:
            return
        if cost is not None and type(usage) is dict:
            usage["cost"] = cost
