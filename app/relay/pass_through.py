"""The openai-kind stream's fast path: an upstream event that already keeps the contract goes
to the client as the upstream wrote it, only its `model` rewritten, instead of being decoded
into an SSE event, translated, audited and encoded again.

Which events qualify is the stream translator's decision (`fast_path()`, which also records
what the event changes in its state: an argument fragment for the audit). A chunk the check
edited (marked EDITED: Azure's filter annotations removed) is encoded instead, as the slow way
would encode it, and the next like it comes from a template of that encoding. This module only
handles the bytes, and decodes no more of them than it must: of an event that differs from the
last relayed one only in its text or argument fragment, just that string. Measured
(bench/RESULTS.md, issue 23): our per-chunk code costs ~4x in a busy server what it costs in a
loop, so doing less of it per chunk is what pays."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from app.sse import SSEDecoder
from app.translators.base import EDITED, Chunk, PassCheck, Repeat

MAX_UNUSED_TEMPLATES = 4
"""Templates learnt in a row with no event matching any of them, before a stream stops
learning: an upstream that varies another field in every event (OpenAI's `obfuscation`) would
only pay for the learning."""

_STRING_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_MARK = b'"\\u0001"'
"""The stand-in string "\x01" as orjson writes it."""


class PassThrough:
    """Every read of one stream: whole `data: {...}` events are relayed; any other event (a
    comment, a named or multi-line event, [DONE], a chunk the translator must repair) and any
    read that does not end at an event's end go `slow` (decoded, translated, encoded).

    An event that differs from the last relayed one only in its text or argument fragment
    matches that one's byte template and is relayed without being decoded or checked again
    (the translator's Repeat records it); any other event drops the template. The common
    read, one event like the last, takes three Python calls (measured: in a busy server each
    call per read costs several times what it costs in a loop)."""

    __slots__ = (
        "_accept",
        "_client_model",
        "_decoder",
        "_model_field",
        "_needles",
        "_slow",
        "_split",
        "_template",
        "_unused",
        "_upstream_model",
    )

    def __init__(
        self,
        accept: PassCheck,
        client_model: str,
        slow: Callable[[bytes], bytes],
        slow_decoder: SSEDecoder,
    ) -> None:
        """`slow_decoder`: the slow way's, which may hold part of an event after a read (then
        the reads that follow go the slow way too, until it is idle)."""
        self._accept = accept
        self._client_model = client_model
        self._slow = slow
        self._decoder = slow_decoder
        self._split = False  # the slow way's decoder holds part of an event
        self._model_field = b'"model":' + orjson.dumps(client_model)
        self._upstream_model: object = None
        self._needles: tuple[bytes, ...] = ()
        self._template: _Template | None = None
        self._unused = 0

    def frames(self, upstream_bytes: bytes) -> bytes:
        """The client's bytes for one upstream read."""
        if self._split or upstream_bytes[-2:] != b"\n\n" or b"\r" in upstream_bytes:
            self._template = None
            frames = self._slow(upstream_bytes)
            self._split = not self._decoder.idle
            return frames
        template = self._template
        if template is not None:  # most reads are one event like the last one
            relayed = template.relayed(upstream_bytes, len(upstream_bytes) - 2)
            if relayed is not None:
                self._unused = 0
                return relayed
        return b"".join([self._event(block) for block in upstream_bytes[:-2].split(b"\n\n")])

    def _event(self, block: bytes) -> bytes:
        template = self._template
        if template is not None:
            relayed = template.relayed(block, len(block))
            if relayed is not None:
                self._unused = 0
                return relayed
            self._template = None
        if block[:7] == b"data: {" and b"\n" not in block:
            relayed = self._relayed(block)
            if relayed is not None:
                return relayed
        return self._slow(block + b"\n\n")

    def _relayed(self, block: bytes) -> bytes | None:
        try:
            chunk = orjson.loads(block[6:])
        except orjson.JSONDecodeError:
            return None  # the slow path says what is wrong with it
        if type(chunk) is not dict:
            return None
        upstream_model = chunk.get("model")
        repeat = self._accept(chunk)
        if repeat is None:
            return None
        if chunk.pop(EDITED, None) is not None:
            return self._encoded(block, chunk, repeat)
        if upstream_model != self._upstream_model:
            self._upstream_model = upstream_model
            self._needles = _model_needles(upstream_model)
        for needle in self._needles:
            # Inside a JSON string every quote is escaped, so the needle can only be a key.
            if block.count(needle) == 1:
                self._unused += 1
                if self._unused <= MAX_UNUSED_TEMPLATES:
                    self._template = _Template.learn(
                        block, chunk, repeat, needle, self._model_field
                    )
                return block.replace(needle, self._model_field) + b"\n\n"
        chunk["model"] = self._client_model
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def _encoded(self, block: bytes, chunk: Chunk, repeat: Repeat) -> bytes:
        """A chunk the check edited (Azure's annotations removed): encoded as the slow way
        encodes it, its shape learnt so the next like it needs no more than its string."""
        chunk["model"] = self._client_model
        self._unused += 1
        if self._unused <= MAX_UNUSED_TEMPLATES:
            self._template = _Template.learn_edited(block, chunk, repeat)
        return b"data: " + orjson.dumps(chunk) + b"\n\n"


class _Template:
    """A relayed event's bytes around its one varying string (a text delta, an argument
    fragment). An event with the same bytes before and after a valid JSON string there is the
    same chunk but for that string (a string token parses the same wherever it stands), so it
    needs no decoding but of that string. The client's bytes around it are the upstream's (the
    model rewritten), or, for a chunk the check edited, its encoding: the string re-encoded."""

    __slots__ = ("_after", "_before", "_client_after", "_client_before", "_reencode", "_repeat")

    def __init__(
        self,
        framing: tuple[bytes, bytes],
        repeat: Repeat,
        client_framing: tuple[bytes, bytes],
        reencode: bool,
    ) -> None:
        self._before, self._after = framing  # up to the string's opening quote; from its closing
        self._repeat = repeat
        self._client_before = client_framing[0]  # up to the string's quotes, without them
        self._client_after = client_framing[1] + b"\n\n"
        self._reencode = reencode

    @classmethod
    def learn(
        cls, block: bytes, chunk: Chunk, repeat: Repeat, model_needle: bytes, model_field: bytes
    ) -> _Template | None:
        framing = _framing(block, chunk)
        if framing is None:
            return None
        before, after = framing
        if model_needle in before:
            client = before.replace(model_needle, model_field), after
        else:
            client = before, after.replace(model_needle, model_field)
        return cls(framing, repeat, (client[0][:-1], client[1][1:]), False)

    @classmethod
    def learn_edited(cls, block: bytes, chunk: Chunk, repeat: Repeat) -> _Template | None:
        """For a chunk the check edited: the client's bytes are the edited chunk's encoding,
        split where its string stands (found by encoding it with a stand-in there)."""
        found = _varying_string(chunk)
        framing = _framing(block, orjson.loads(block[6:])) if found is not None else None
        if found is None or framing is None:
            return None
        holder, key = found
        value = holder[key]
        holder[key] = "\x01"
        try:
            encoded = b"data: " + orjson.dumps(chunk)
        finally:
            holder[key] = value
        if encoded.count(_MARK) != 1:
            return None
        at = encoded.find(_MARK)
        return cls(framing, repeat, (encoded[:at], encoded[at + len(_MARK) :]), True)

    def relayed(self, data: bytes, end: int) -> bytes | None:
        """The client's bytes for the event `data[:end]` if it matches (its string recorded),
        else None. A JSON string holds no line break, so a match is one event (and a read of
        several is told apart without a failed decode, whose exception costs more)."""
        before, after = self._before, self._after
        value_end = end - len(after)
        if (
            value_end < len(before)
            or not data.startswith(before)
            or not data.endswith(after, 0, end)
            or data.find(b"\n", len(before), value_end) >= 0
        ):
            return None
        token = data[len(before) - 1 : value_end + 1]
        try:
            value = orjson.loads(token)
        except orjson.JSONDecodeError:
            return None  # a quote ends the string early: the event differs in its shape
        self._repeat(value)
        if self._reencode:
            token = orjson.dumps(value)
        return self._client_before + token + self._client_after


def _framing(block: bytes, chunk: Chunk) -> tuple[bytes, bytes] | None:
    """The bytes of `block` (which decodes to `chunk`) before and after its varying string,
    each with the string's quote, if they are proven to frame that string and nothing else."""
    found = _varying_string(chunk)
    if found is None:
        return None
    holder, key = found
    # Where the string probably starts; the proof below is what counts.
    key_at = block.find(orjson.dumps(key))
    token = _STRING_TOKEN.search(block, block.find(b":", key_at)) if key_at > 0 else None
    if token is None:
        return None
    before, after = block[: token.start() + 1], block[token.end() - 1 :]
    # The proof that these bytes frame that string and nothing else: with another string
    # there, the event decodes to the same chunk with that string.
    value = holder[key]
    holder[key] = "\x01"
    try:
        framed = orjson.loads(before[6:] + b"\\u0001" + after) == chunk
    except orjson.JSONDecodeError:
        framed = False
    finally:
        holder[key] = value
    return (before, after) if framed else None


def _varying_string(chunk: Chunk) -> tuple[dict[str, Any], str] | None:
    """Where a passed chunk's one varying string is: an argument fragment or a text delta."""
    try:
        delta = chunk["choices"][0]["delta"]
        entries = delta.get("tool_calls")
        if entries:
            function = entries[0]["function"]
            return (function, "arguments") if type(function["arguments"]) is str else None
        return (delta, "content") if type(delta.get("content")) is str else None
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def _model_needles(model: object) -> tuple[bytes, ...]:
    """`"model":"m"` as compact and as spaced JSON writes it."""
    if type(model) is not str:
        return ()
    value = orjson.dumps(model)
    return (b'"model":' + value, b'"model": ' + value)
