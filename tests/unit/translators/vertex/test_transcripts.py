"""Every behaviour in tests/transcripts/vertex/: Gemini (`gemini_*`) and Claude (`claude_*`) on
Vertex AI. For each, the URL and exact body we send (Claude's without `model`, with Vertex's
`anthropic_version`; each body also passing its family's own rules), and what the client gets
back: chunks for a stream (the same at every byte split), the completion for a JSON answer, the
error for an HTTP error answer; checked against the contract's invariants.

The stored answers are checked against the providers' own SDK types (google-genai's
GenerateContentResponse, which forbids unknown fields; anthropic's Message and
RawMessageStreamEvent), so they are shapes Vertex really sends.

`pytest --update-transcripts` rewrites upstream_request.json and expected.* from the code;
review the diff against PROTOCOLS.md H.2 before keeping it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic.types
import orjson
import pytest
from google.genai import types as genai_types
from pydantic import TypeAdapter

from app.config import ProviderConfig
from app.errors import ProxyError
from app.openai_types import ChatRequest, parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext, Target, Translator, translator_for
from tests.helpers import anthropic_rules, gemini_rules, genai_request
from tests.helpers.byte_splits import byte_splits
from tests.helpers.mock_gemini import issued_signatures
from tests.helpers.mock_upstream import Reply
from tests.helpers.openai_stream import assert_openai_stream, fold_stream
from tests.helpers.transcripts import (
    Cases,
    assert_complete,
    case_id,
    check,
    error_view,
    failed,
    sse_payloads,
    sse_view,
)

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "vertex"
CASES = Cases(TRANSCRIPTS)
PROVIDER = ProviderConfig(kind="vertex", project="my-project", region="us-east5")
PUBLISHERS = "https://us-east5-aiplatform.googleapis.com/v1/projects/my-project/locations/us-east5/publishers"
GEMINI = Target("gemini-vertex", "gcp", PROVIDER, "gemini-2.5-flash")
CLAUDE = Target("claude-vertex", "gcp", PROVIDER, "claude-sonnet-4-5@20250929")
# Cases whose history replays another case's answer: the signatures that answer handed out are
# the ones Gemini expects back (gemini_rules).
REPLAYS = {"gemini_thought_signature_history": "gemini_thought_signature_call"}
STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)


def is_claude(case: Path) -> bool:
    return case.name.startswith("claude_")


def target(case: Path) -> Target:
    return CLAUDE if is_claude(case) else GEMINI


def translator(case: Path) -> Translator:
    return translator_for(TRANSLATORS, target(case))


def client_request(case: Path) -> ChatRequest:
    return parse_chat_request((case / "client_request.json").read_bytes())


def context(case: Path) -> ResponseContext:
    request = client_request(case)
    return ResponseContext("chatcmpl-test", 1700000000, request.model, request, target=target(case))


def client_view(case: Path, pieces: list[bytes] | None = None) -> list[dict[str, Any]]:
    body = (case / "upstream.sse").read_bytes()
    return sse_view(lambda: translator(case).stream(context(case)), pieces or [body])


def non_stream_answer(case: Path) -> dict[str, Any]:
    try:
        return translator(case).parse_response((case / "upstream.json").read_bytes(), context(case))
    except ProxyError as error:
        return error_view(error)


def expected_url(case: Path) -> str:
    streamed = case in CASES.stream
    if is_claude(case):
        method = "streamRawPredict" if streamed else "rawPredict"
        return f"{PUBLISHERS}/anthropic/models/claude-sonnet-4-5@20250929:{method}"
    method = "streamGenerateContent?alt=sse" if streamed else "generateContent"
    return f"{PUBLISHERS}/google/models/gemini-2.5-flash:{method}"


def issued(case: Path) -> gemini_rules.Signatures:
    source = REPLAYS.get(case.name)
    if source is None:
        return {}
    answered = orjson.loads((TRANSCRIPTS / source / "upstream.json").read_bytes())
    return issued_signatures(Reply(json=answered))


def family_problems(case: Path, body: dict[str, Any]) -> list[str]:
    """What the model's own API would refuse in the body (history, pairing, signatures)."""
    if is_claude(case):
        return anthropic_rules.request_problems(body)
    return gemini_rules.request_problems(body, issued(case)) + genai_request.body_problems(body)


@pytest.mark.parametrize("case", [c for c in CASES.all if not is_claude(c)], ids=case_id)
def test_the_stored_gemini_request_is_a_body_google_genai_types_accept(case: Path) -> None:
    """The stored body itself, not only the code's (which `--update-transcripts` copies
    there): each field google-genai's types know, spelt as the REST API spells it."""
    stored = orjson.loads((case / "upstream_request.json").read_bytes())
    assert genai_request.body_problems(stored) == []


@pytest.mark.parametrize("case", CASES.all, ids=case_id)
def test_upstream_request(case: Path, update_transcripts: bool) -> None:
    upstream_request = translator(case).build_request(client_request(case), target(case))
    assert upstream_request.url == expected_url(case)
    assert upstream_request.stream == (case in CASES.stream)
    assert upstream_request.headers == {"content-type": "application/json"}
    upstream_body = orjson.loads(upstream_request.body)
    check(case / "upstream_request.json", upstream_body, update_transcripts)
    if is_claude(case):
        assert "model" not in upstream_body
        assert upstream_body["anthropic_version"] == "vertex-2023-10-16"
    assert family_problems(case, upstream_body) == []


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.jsonl", client_view(case), update_transcripts)


@pytest.mark.parametrize("case", CASES.json, ids=case_id)
def test_non_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.json", non_stream_answer(case), update_transcripts)


@pytest.mark.parametrize("case", CASES.http, ids=case_id)
def test_http_error(case: Path, update_transcripts: bool) -> None:
    upstream = orjson.loads((case / "upstream_http.json").read_bytes())
    error = translator(case).parse_error(
        upstream["status"], orjson.dumps(upstream["body"]), upstream["headers"]
    )
    check(case / "expected.json", error_view(error), update_transcripts)


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_stream_keeps_the_contract(case: Path) -> None:
    view = client_view(case)
    if failed(view):
        assert all(chunk["object"] == "chat.completion.chunk" for chunk in view[:-1])
        return
    assert_openai_stream(view, include_usage=client_request(case).include_usage)


@pytest.mark.parametrize(("stream_case", "json_case"), CASES.pairs, ids=lambda case: case.name)
def test_folded_stream_equals_the_non_stream_answer(stream_case: Path, json_case: Path) -> None:
    folded = fold_stream(client_view(stream_case))
    answer = non_stream_answer(json_case)
    if "usage" not in folded:  # the stream's client did not ask for usage
        del answer["usage"]
    for completion in (folded, answer):  # Claude's streamed arguments are its own JSON text
        for call in completion["choices"][0]["message"].get("tool_calls", ()):
            call["function"]["arguments"] = orjson.loads(call["function"]["arguments"])
    assert folded == answer


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    body = (case / "upstream.sse").read_bytes()
    whole = client_view(case)
    for pieces in byte_splits(body, case.name):
        assert client_view(case, pieces) == whole


@pytest.mark.parametrize("case", CASES.json + CASES.stream, ids=case_id)
def test_stored_answers_are_the_sdks_types(case: Path) -> None:
    """google-genai and anthropic accept every stored answer: the transcripts are real shapes."""
    answers = (
        sse_payloads((case / "upstream.sse").read_bytes())
        if case in CASES.stream
        else [orjson.loads((case / "upstream.json").read_bytes())]
    )
    assert answers
    for answer in answers:
        if not is_claude(case):
            genai_types.GenerateContentResponse.model_validate(answer)
        elif answer["type"] == "message":
            anthropic.types.Message.model_validate(answer)
        elif answer["type"] != "ping":
            STREAM_EVENT.validate_python(answer)


@pytest.mark.parametrize("case", CASES.http, ids=case_id)
def test_stored_errors_are_the_providers_shapes(case: Path) -> None:
    body = orjson.loads((case / "upstream_http.json").read_bytes())["body"]
    if is_claude(case):
        anthropic.types.ErrorResponse.model_validate(body)
        return
    assert set(body) == {"error"}
    assert {"code", "message", "status"} <= set(body["error"])


def test_thought_signature_round_trip() -> None:
    """The id gemini_thought_signature_call gives its signed call is the one the history of
    gemini_thought_signature_history holds, and the signature goes back to Vertex unchanged."""
    answered = non_stream_answer(TRANSCRIPTS / "gemini_thought_signature_call")
    (answered_call,) = answered["choices"][0]["message"]["tool_calls"]
    history_case = TRANSCRIPTS / "gemini_thought_signature_history"
    (replayed_call,) = orjson.loads((history_case / "client_request.json").read_bytes())[
        "messages"
    ][1]["tool_calls"]
    assert replayed_call == answered_call
    upstream = orjson.loads(
        (TRANSCRIPTS / "gemini_thought_signature_call/upstream.json").read_bytes()
    )
    (signed_part,) = upstream["candidates"][0]["content"]["parts"]
    sent = orjson.loads((history_case / "upstream_request.json").read_bytes())
    assert sent["contents"][1] == {"role": "model", "parts": [signed_part]}


def test_every_case_is_complete() -> None:
    assert len(CASES.all) >= 15
    assert_complete(CASES)
