"""The openai-kind stream's fast path: an upstream event that already keeps the contract goes
to the client as the upstream wrote it, only its `model` rewritten, instead of being decoded
into an SSE event, translated, audited and encoded again.

Which events qualify is the stream translator's decision (`fast_path()`, which also records
what the event changes in its state: an argument fragment for the audit); this module only
handles the bytes. Measured (bench/RESULTS.md, issue 23): our per-chunk code costs ~3x in a
busy server what it costs in a loop, so doing less of it per chunk is what pays."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from app.translators.base import Chunk

PassCheck = Callable[[Chunk], bool]
"""Whether a decoded upstream chunk may go out as it came (and its effect, recorded)."""


class PassThrough:
    """Relays the whole `data: {...}` events of one read; any other event (a comment, a
    named or multi-line event, [DONE], a chunk the translator must repair) goes `slow`."""

    __slots__ = ("_accept", "_client_model", "_model_field", "_needles", "_upstream_model")

    def __init__(self, accept: PassCheck, client_model: str) -> None:
        self._accept = accept
        self._client_model = client_model
        self._model_field = b'"model":' + orjson.dumps(client_model)
        self._upstream_model: object = None
        self._needles: tuple[bytes, ...] = ()

    def frames(self, upstream_bytes: bytes, slow: Callable[[bytes], bytes]) -> bytes:
        """`upstream_bytes` holds whole events only (it ends with a blank line, has no CR)."""
        parts = []
        for block in upstream_bytes[:-2].split(b"\n\n"):
            if block[:7] == b"data: {" and b"\n" not in block:
                relayed = self._relayed(block)
                if relayed is not None:
                    parts.append(relayed)
                    continue
            parts.append(slow(block + b"\n\n"))
        return b"".join(parts)

    def _relayed(self, block: bytes) -> bytes | None:
        try:
            chunk = orjson.loads(block[6:])
        except orjson.JSONDecodeError:
            return None  # the slow path says what is wrong with it
        if type(chunk) is not dict:
            return None
        upstream_model = chunk.get("model")
        if not self._accept(chunk):
            return None
        if upstream_model != self._upstream_model:
            self._upstream_model = upstream_model
            self._needles = _model_needles(upstream_model)
        for needle in self._needles:
            # Inside a JSON string every quote is escaped, so the needle can only be a key.
            if block.count(needle) == 1:
                return block.replace(needle, self._model_field) + b"\n\n"
        chunk["model"] = self._client_model
        return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _model_needles(model: object) -> tuple[bytes, ...]:
    """`"model":"m"` as compact and as spaced JSON writes it."""
    if type(model) is not str:
        return ()
    value = orjson.dumps(model)
    return (b'"model":' + value, b'"model": ' + value)
