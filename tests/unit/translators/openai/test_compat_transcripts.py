"""Every file in tests/transcripts/openai_compat/: one OpenAI-compatible server's deviation from
OpenAI's dialect (PROTOCOLS.md §D), shaped as that server sends it, and exactly what the client
gets instead: a strict stream (or answer) with the deviation repaired.

A transcript is one JSON file: `why` (the server and the evidence), `include_usage` (what the
client asked), `upstream` (the chunks, or "[DONE]", as SSE data; or one non-stream answer) and
`expected`. `pytest --update-transcripts` rewrites `expected` from the code: review the diff
against PROTOCOLS.md before keeping it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.errors import ProxyError
from app.openai_types import parse_chat_request
from app.sse import SSEDecoder
from app.translators.base import ResponseContext
from app.translators.openai.response import parse_response
from app.translators.openai.stream import OpenAIStream
from tests.helpers.openai_stream import assert_openai_completion, assert_openai_stream

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "openai_compat"
CASES = sorted(TRANSCRIPTS.glob("*.json"))
STREAM_CASES = [
    case for case in CASES if isinstance(orjson.loads(case.read_bytes())["upstream"], list)
]
ANSWER_CASES = [case for case in CASES if case not in STREAM_CASES]


def case_id(case: Path) -> str:
    return case.stem


def load(case: Path) -> dict[str, Any]:
    return dict(orjson.loads(case.read_bytes()))


def context(include_usage: bool) -> ResponseContext:
    body = {
        "model": "fast",
        "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        "stream": True,
        "stream_options": {"include_usage": include_usage},
    }
    return ResponseContext(
        "chatcmpl-test", 1700000000, "fast", parse_chat_request(orjson.dumps(body))
    )


def sse_body(upstream: list[Any]) -> bytes:
    """The upstream's bytes: each entry one `data:` event, strings as they are."""
    events = [
        entry if isinstance(entry, str) else orjson.dumps(entry).decode() for entry in upstream
    ]
    return "".join(f"data: {event}\n\n" for event in events).encode()


def client_view(body: bytes, include_usage: bool, pieces: list[bytes] | None = None) -> list[Any]:
    """What the client gets for an upstream body: the chunks, then the error event the relay
    would send if the translator raised."""
    stream = OpenAIStream(context(include_usage))
    decoder = SSEDecoder()
    view: list[Any] = []
    try:
        for piece in pieces or [body]:
            for event in decoder.feed(piece):
                view += stream.feed(event)
        for event in decoder.flush():
            view += stream.feed(event)
        view += stream.finish()
    except ProxyError as error:
        view.append(error.body())
    return view


def check(case: Path, actual: Any, update: bool) -> None:
    """Compare with the transcript's `expected`, or rewrite it (the rest of the file kept)."""
    transcript = load(case)
    if update:
        transcript["expected"] = actual
        case.write_bytes(orjson.dumps(transcript, option=orjson.OPT_INDENT_2) + b"\n")
    assert actual == transcript["expected"]


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream(case: Path, update_transcripts: bool) -> None:
    transcript = load(case)
    view = client_view(sse_body(transcript["upstream"]), transcript["include_usage"])
    check(case, view, update_transcripts)


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream_keeps_the_contract(case: Path) -> None:
    transcript = load(case)
    view = client_view(sse_body(transcript["upstream"]), transcript["include_usage"])
    if "error" in view[-1]:
        assert not any("error" in chunk for chunk in view[:-1])
        return
    assert_openai_stream(view, include_usage=transcript["include_usage"])


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_repaired_stream_is_relayed_untouched(case: Path) -> None:
    """What the client got is strict, so sent again as an upstream it comes back unchanged."""
    transcript = load(case)
    expected = transcript["expected"]
    if "error" in expected[-1]:
        return
    again = client_view(sse_body([*expected, "[DONE]"]), transcript["include_usage"])
    assert again == expected


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    transcript = load(case)
    body = sse_body(transcript["upstream"])
    whole = client_view(body, transcript["include_usage"])
    rng = random.Random(case.name)
    for _ in range(10):
        cuts = sorted(rng.sample(range(1, len(body)), k=min(9, len(body) - 1)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert client_view(body, transcript["include_usage"], pieces) == whole


@pytest.mark.parametrize("case", ANSWER_CASES, ids=case_id)
def test_answer(case: Path, update_transcripts: bool) -> None:
    transcript = load(case)
    answer = parse_response(orjson.dumps(transcript["upstream"]), context(False))
    check(case, answer, update_transcripts)
    assert_openai_completion(answer)


@pytest.mark.parametrize("case", ANSWER_CASES, ids=case_id)
def test_repaired_answer_is_relayed_untouched(case: Path) -> None:
    expected = load(case)["expected"]
    assert parse_response(orjson.dumps(expected), context(False)) == expected


def test_every_transcript_says_where_it_comes_from() -> None:
    assert len(STREAM_CASES) >= 15
    assert len(ANSWER_CASES) >= 5
    for case in CASES:
        transcript = load(case)
        assert set(transcript) == {"why", "include_usage", "upstream", "expected"}, case
        assert len(transcript["why"]) > 40, case
