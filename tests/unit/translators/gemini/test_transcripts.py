"""Every behaviour in tests/transcripts/gemini/: the exact body we send upstream (which must also
pass the Gemini API's own rules, tests/helpers/gemini_rules.py), and what the client gets back:
chunks for a stream, the completion for a JSON answer, the error (status, headers, body) for an
HTTP error answer; all checked against the contract's invariants.

`pytest --update-transcripts` rewrites upstream_request.json and expected.* from the code;
review the diff against PROTOCOLS.md §C before keeping it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import ProxyError
from app.openai_types import ChatRequest, parse_chat_request
from app.sse import SSEDecoder
from app.translators.base import ResponseContext, Target
from app.translators.gemini.errors import parse_error
from app.translators.gemini.request import build_request
from app.translators.gemini.response import parse_response
from app.translators.gemini.stream import GeminiStream
from tests.helpers.byte_splits import byte_splits
from tests.helpers.gemini_rules import Signatures, request_problems
from tests.helpers.mock_gemini import issued_signatures
from tests.helpers.mock_upstream import Frame, Reply
from tests.helpers.openai_stream import assert_openai_stream, fold_stream
from tests.helpers.transcripts import check, error_view

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "gemini"
CASES = sorted(path for path in TRANSCRIPTS.iterdir() if path.is_dir())
STREAM_CASES = [case for case in CASES if (case / "upstream.sse").exists()]
JSON_CASES = [case for case in CASES if (case / "upstream.json").exists()]
HTTP_CASES = [case for case in CASES if (case / "upstream_http.json").exists()]
# A `<behaviour>_stream` directory and a `<behaviour>` one hold the same answer in both forms.
PAIRS = [
    (case, case.with_name(case.name.removesuffix("_stream")))
    for case in STREAM_CASES
    if case.name.endswith("_stream") and case.with_name(case.name.removesuffix("_stream")).is_dir()
]

TARGET = Target(
    model_name="gemini",
    provider_name="gemini",
    provider=ProviderConfig(kind="gemini", api_key="<key>"),
    upstream_model="gemini-2.5-flash",
)
BASE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"


def case_id(case: Path) -> str:
    return case.name


def client_request(case: Path) -> ChatRequest:
    return parse_chat_request((case / "client_request.json").read_bytes())


def context(request: ChatRequest) -> ResponseContext:
    return ResponseContext("chatcmpl-test", 1700000000, request.model, request)


def client_view(case: Path, pieces: Iterable[bytes] | None = None) -> list[dict[str, Any]]:
    """The chunks a client gets for the case's upstream.sse, fed through the real decoder in
    the given pieces. If the translator raises before any chunk, the client gets an HTTP
    error (its status, headers and body); after, the error body the relay sends in-band."""
    stream = GeminiStream(context(client_request(case)))
    decoder = SSEDecoder()
    view: list[dict[str, Any]] = []
    try:
        for piece in pieces or [(case / "upstream.sse").read_bytes()]:
            for event in decoder.feed(piece):
                view.extend(stream.feed(event))
        for event in decoder.flush():
            view.extend(stream.feed(event))
        view.extend(stream.finish())
    except ProxyError as error:
        view.append(error.body() if view else error_view(error))
    return view


def non_stream_answer(case: Path) -> dict[str, Any]:
    request = client_request(case)
    try:
        return parse_response((case / "upstream.json").read_bytes(), context(request))
    except ProxyError as error:
        return error_view(error)


def upstream_answers(case: Path) -> Reply:
    if case in STREAM_CASES:
        events = SSEDecoder().feed((case / "upstream.sse").read_bytes())
        return Reply(frames=[Frame(orjson.loads(event.data)) for event in events])
    return Reply(json=orjson.loads((case / "upstream.json").read_bytes()))


# Cases whose history replays another case's answer: the signatures that answer handed out
# are the ones Gemini expects back (gemini_rules).
REPLAYS = {"thought_signature_history": "thought_signature_call"}


def issued(case: Path) -> Signatures:
    source = REPLAYS.get(case.name)
    return issued_signatures(upstream_answers(case.with_name(source))) if source else {}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_upstream_request(case: Path, update_transcripts: bool) -> None:
    upstream_request = build_request(client_request(case), TARGET)
    streamed = case in STREAM_CASES
    method = ":streamGenerateContent?alt=sse" if streamed else ":generateContent"
    assert upstream_request.url == BASE + method
    assert upstream_request.stream == streamed
    assert upstream_request.headers == {
        "content-type": "application/json",
        "x-goog-api-key": "<key>",
    }
    upstream_body = orjson.loads(upstream_request.body)
    check(case / "upstream_request.json", upstream_body, update_transcripts)
    assert request_problems(upstream_body, issued(case)) == []


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.jsonl", client_view(case), update_transcripts)


@pytest.mark.parametrize("case", JSON_CASES, ids=case_id)
def test_non_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.json", non_stream_answer(case), update_transcripts)


@pytest.mark.parametrize("case", HTTP_CASES, ids=case_id)
def test_http_error(case: Path, update_transcripts: bool) -> None:
    upstream = orjson.loads((case / "upstream_http.json").read_bytes())
    error = parse_error(upstream["status"], orjson.dumps(upstream["body"]), upstream["headers"])
    check(case / "expected.json", error_view(error), update_transcripts)


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream_keeps_the_contract(case: Path) -> None:
    view = client_view(case)
    if "error" in view[-1] or "status" in view[-1]:
        # A failed stream: what came before the error must still be well-formed chunks.
        assert all(chunk["object"] == "chat.completion.chunk" for chunk in view[:-1])
        assert not any("error" in chunk for chunk in view[:-1])
        return
    assert_openai_stream(view, include_usage=client_request(case).include_usage)


@pytest.mark.parametrize(("stream_case", "json_case"), PAIRS, ids=lambda case: case.name)
def test_folded_stream_equals_the_non_stream_answer(stream_case: Path, json_case: Path) -> None:
    view = client_view(stream_case)
    answer = non_stream_answer(json_case)
    if "error" in view[-1] or "status" in answer:
        assert "error" in view[-1]
        assert "status" in answer
        return
    folded = fold_stream(view)
    if "usage" not in folded:  # the stream's client did not ask for usage
        del answer["usage"]
    assert folded == answer


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    body = (case / "upstream.sse").read_bytes()
    whole = client_view(case)
    for pieces in byte_splits(body, case.name):
        assert client_view(case, pieces) == whole


def test_thought_signature_round_trip() -> None:
    """The id thought_signature_call gives its signed call is the one the history of
    thought_signature_history holds, and the signature goes back upstream unchanged."""
    answered = non_stream_answer(TRANSCRIPTS / "thought_signature_call")
    (answered_call,) = answered["choices"][0]["message"]["tool_calls"]
    history = orjson.loads(
        (TRANSCRIPTS / "thought_signature_history/client_request.json").read_bytes()
    )
    (replayed_call,) = history["messages"][1]["tool_calls"]
    assert replayed_call == answered_call

    upstream = orjson.loads((TRANSCRIPTS / "thought_signature_call/upstream.json").read_bytes())
    (signed_part,) = upstream["candidates"][0]["content"]["parts"]
    sent = build_request(parse_chat_request(orjson.dumps(history)), TARGET)
    model_turn = orjson.loads(sent.body)["contents"][1]
    assert model_turn == {"role": "model", "parts": [signed_part]}


def test_every_case_is_complete() -> None:
    assert len(CASES) >= 30
    for case in CASES:
        names = {path.name for path in case.iterdir()}
        assert {"client_request.json", "upstream_request.json", "SOURCE.md"} <= names, case
        forms = [
            {"upstream.sse", "expected.jsonl"} <= names,
            {"upstream.json", "expected.json"} <= names,
            {"upstream_http.json", "expected.json"} <= names,
        ]
        assert forms.count(True) == 1, case
