"""Azure's chunks on the relay's pass-through (issue 30): every delta carries
`content_filter_results`, so the fast path takes such a chunk with the annotations removed and
the relay encodes it (later ones like it from a byte template) rather than sending it the slow
way. The client's bytes are exactly the translation's, at every byte split; no text delta or
argument fragment is decoded by the slow way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from app.relay.pass_through import PassThrough
from app.sse import OPENAI_ENCODER, SSEDecoder
from app.translators.azure import TRANSLATOR
from app.translators.base import ResponseContext
from tests.helpers.byte_splits import byte_splits
from tests.helpers.transcripts import case_id
from tests.unit.translators.azure.test_transcripts import CASES, context

HEAD = (
    b'"created":1745934107,"id":"chatcmpl-1","model":"gpt-4o-2024-11-20",'
    b'"object":"chat.completion.chunk","system_fingerprint":"fp_1"}\n\n'
)
FILTERS = (
    b'{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}'
)


def azure_chunk(filters: bytes, delta: bytes, finish: bytes = b"null") -> bytes:
    return (
        b'data: {"choices":[{"content_filter_results":' + filters + b',"delta":' + delta
        + b',"finish_reason":' + finish + b',"index":0,"logprobs":null}],' + HEAD
    )  # fmt: skip


def relay(ctx: ResponseContext) -> tuple[PassThrough, Callable[[bytes], bytes], list[bytes]]:
    """The pass-through as the relay builds it, and the reads its slow way was given."""
    stream = TRANSLATOR.stream(ctx)
    decoder = SSEDecoder()
    slow_reads: list[bytes] = []

    def translated(upstream_bytes: bytes) -> bytes:
        slow_reads.append(upstream_bytes)
        chunks = [chunk for event in decoder.feed(upstream_bytes) for chunk in stream.feed(event)]
        return OPENAI_ENCODER.encode(chunks) if chunks else b""

    def rest() -> bytes:
        tail = [chunk for event in decoder.flush() for chunk in stream.feed(event)]
        return OPENAI_ENCODER.encode(tail + stream.finish())

    fast_path = getattr(stream, "fast_path")  # noqa: B009 (the relay's own lookup)
    return PassThrough(fast_path(), ctx.model, translated, decoder), rest, slow_reads


def relayed(ctx: ResponseContext, pieces: list[bytes]) -> tuple[bytes, list[bytes]]:
    through, rest, slow_reads = relay(ctx)
    return b"".join(through.frames(piece) for piece in pieces) + rest(), slow_reads


def translated(ctx: ResponseContext, body: bytes) -> bytes:
    """The translation alone (one read of the whole body: the slow way for every event)."""
    stream = TRANSLATOR.stream(ctx)
    decoder = SSEDecoder()
    chunks = [
        chunk for event in decoder.feed(body) + decoder.flush() for chunk in stream.feed(event)
    ]
    return OPENAI_ENCODER.encode(chunks + stream.finish())


def needs_the_slow_way(read: bytes) -> bool:
    """[DONE], a chunk without a choice, or a choice's role, finish or call's first delta."""
    if not read.startswith(b"data: {"):
        return True
    choices = orjson.loads(read[6:])["choices"]
    if not choices:
        return True
    choice = choices[0]
    calls = choice["delta"].get("tool_calls")
    return (
        "role" in choice["delta"]
        or choice["finish_reason"] is not None
        or (bool(calls) and "id" in calls[0])
    )


def events(body: bytes) -> list[bytes]:
    return [event + b"\n\n" for event in body.split(b"\n\n") if event]


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_the_client_gets_the_translations_bytes_at_every_split(case: Path) -> None:
    body = (case / "upstream.sse").read_bytes()
    expected = translated(context(case), body)
    for pieces in [events(body), *byte_splits(body, case.name, random_splits=10)]:
        assert relayed(context(case), pieces)[0] == expected


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_no_text_delta_or_argument_fragment_goes_the_slow_way(case: Path) -> None:
    """One event a read, as Azure sends them: the slow way sees the prompt's annotation, the
    role, a call's first delta, the finish, the usage and [DONE], nothing else."""
    _, slow_reads = relayed(context(case), events((case / "upstream.sse").read_bytes()))
    assert slow_reads
    assert all(needs_the_slow_way(read) for read in slow_reads), slow_reads


def test_a_chunk_like_the_last_is_its_string_re_encoded_as_the_translation_writes_it() -> None:
    """After one annotated text delta, the next like it matches its template: its string
    (escapes, a quote, a non-ASCII character) is written as orjson writes it, annotations gone."""
    ctx = context(CASES.stream[0])
    body = b"".join(
        [
            azure_chunk(b"{}", b'{"content":"","refusal":null,"role":"assistant"}'),
            azure_chunk(FILTERS, b'{"content":"It is"}'),
            azure_chunk(FILTERS, b'{"content":" 18\\u00b0C, \\"sunny\\"\\n\\u00e9"}'),
            azure_chunk(FILTERS, b'{"content":"!"}'),
            azure_chunk(b"{}", b"{}", b'"stop"'),
            b"data: [DONE]\n\n",
        ]
    )
    sent, slow_reads = relayed(ctx, events(body))
    assert sent == translated(ctx, body)
    assert len(slow_reads) == 3  # the role, the finish, [DONE]
    assert b"content_filter_results" not in sent
    assert '" 18°C, \\"sunny\\"\\né"'.encode() in sent


def test_another_filter_verdict_is_a_new_shape_and_still_removed() -> None:
    """A delta whose filter results differ from the last one's does not match its template:
    it is decoded, checked and encoded again, its annotations removed all the same."""
    ctx = context(CASES.stream[0])
    flagged = FILTERS.replace(
        b'"filtered":false,"severity":"safe"}}', b'"filtered":true,"severity":"low"}}'
    )
    body = b"".join(
        [
            azure_chunk(b"{}", b'{"content":"","role":"assistant"}'),
            azure_chunk(FILTERS, b'{"content":"a"}'),
            azure_chunk(flagged, b'{"content":"b"}'),
            azure_chunk(FILTERS, b'{"content":"c"}'),
            azure_chunk(b"{}", b"{}", b'"stop"'),
        ]
    )
    sent, _ = relayed(ctx, events(body))
    assert sent == translated(ctx, body)
    assert b"_filter_" not in sent
