"""Every behaviour in tests/transcripts/bedrock/: the exact Converse body we send upstream (which
must also pass botocore's `bedrock-runtime` validator and Bedrock's own rules), and what the
client gets back: chunks for a stream, the completion for a JSON answer, the error (status,
headers, body) for an HTTP error answer; all checked against the contract's invariants.

A stream case stores its upstream as ConverseStream events (`upstream_events.json`, each item
one member of botocore's ConverseStreamOutput: an event or an exception as botocore names it);
the test encodes them as the binary `application/vnd.amazon.eventstream` Bedrock sends, and
feeds them through the kind's own framing decoder, cut at every byte.

`pytest --update-transcripts` rewrites upstream_request.json and expected.* from the code;
review the diff against PROTOCOLS.md H.1 before keeping it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import ProxyError
from app.openai_types import ChatRequest, parse_chat_request
from app.translators.base import ResponseContext, Target
from app.translators.bedrock.request import build_request
from app.translators.bedrock.translator import TRANSLATOR
from tests.helpers.bedrock_eventstream import encode_frame, event_frame, padded
from tests.helpers.bedrock_rules import request_problem
from tests.helpers.byte_splits import byte_splits
from tests.helpers.openai_stream import assert_openai_stream, fold_stream
from tests.helpers.transcripts import check, error_view
from tests.unit.translators.bedrock.shapes import MODEL_ID, output_problems, service_model

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "bedrock"
CASES = sorted(path for path in TRANSCRIPTS.iterdir() if path.is_dir())
STREAM_CASES = [case for case in CASES if (case / "upstream_events.json").exists()]
JSON_CASES = [case for case in CASES if (case / "upstream.json").exists()]
HTTP_CASES = [case for case in CASES if (case / "upstream_http.json").exists()]
# A `<behaviour>_stream` directory and a `<behaviour>` one hold the same answer in both forms.
PAIRS = [
    (case, case.with_name(case.name.removesuffix("_stream")))
    for case in STREAM_CASES
    if case.name.endswith("_stream") and case.with_name(case.name.removesuffix("_stream")).is_dir()
]
# Known translator defects: case name -> why its transcript fails (xfail, strict).
DEFECTS: dict[str, str] = {}

PROVIDER = ProviderConfig(kind="bedrock", region="us-east-1", api_key="<key>")
TARGET = Target("claude", "aws", PROVIDER, MODEL_ID)
BASE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/" + MODEL_ID.replace(":", "%3A")
STREAM_OUTPUT = service_model().shape_for("ConverseStreamOutput")


def case_id(case: Path) -> str:
    return case.name


def cases(selected: list[Path]) -> list[Any]:
    """The cases as parameters, a known defect's marked xfail (strict: fixing it must show)."""
    return [
        pytest.param(case, id=case.name, marks=pytest.mark.xfail(strict=True, reason=why))
        if (why := DEFECTS.get(case.name))
        else pytest.param(case, id=case.name)
        for case in selected
    ]


def client_request(case: Path) -> ChatRequest:
    return parse_chat_request((case / "client_request.json").read_bytes())


def context(case: Path) -> ResponseContext:
    request = client_request(case)
    return ResponseContext("chatcmpl-test", 1700000000, request.model, request, target=TARGET)


def upstream_events(case: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = orjson.loads((case / "upstream_events.json").read_bytes())
    return events


def encoded_stream(case: Path) -> bytes:
    """The case's events as Bedrock's binary frames: an event's payload padded with `p` as AWS
    pads it (seeded by the case, so the bytes are stable), an exception as an exception frame
    whose `:exception-type` is botocore's member name."""
    rng = random.Random(case.name)
    frames = []
    for item in upstream_events(case):
        ((name, payload),) = item.items()
        if STREAM_OUTPUT.members[name].metadata.get("exception"):
            headers: dict[str, Any] = {
                ":exception-type": name,
                ":content-type": "application/json",
                ":message-type": "exception",
            }
            frames.append(encode_frame(headers, orjson.dumps(payload)))
        else:
            frames.append(event_frame(name, padded(payload, rng)))
    return b"".join(frames)


def client_view(case: Path, pieces: Iterable[bytes] | None = None) -> list[dict[str, Any]]:
    """The chunks a client gets for the case's stream, fed through the kind's framing decoder
    in the given pieces. An error before any chunk is the HTTP error (status, headers, body);
    after, the error body the relay sends in-band."""
    stream = TRANSLATOR.stream(context(case))
    decoder = TRANSLATOR.framing()
    view: list[dict[str, Any]] = []
    try:
        for piece in pieces or [encoded_stream(case)]:
            for event in decoder.feed(piece):
                view.extend(stream.feed(event))
        for event in decoder.flush():
            view.extend(stream.feed(event))
        view.extend(stream.finish())
    except ProxyError as error:
        view.append(error.body() if view else error_view(error))
    return view


def non_stream_answer(case: Path) -> dict[str, Any]:
    try:
        return TRANSLATOR.parse_response((case / "upstream.json").read_bytes(), context(case))
    except ProxyError as error:
        return error_view(error)


@pytest.mark.parametrize("case", cases(CASES))
def test_upstream_request(case: Path, update_transcripts: bool) -> None:
    upstream_request = build_request(client_request(case), TARGET)
    streamed = case in STREAM_CASES
    assert upstream_request.url == BASE + ("/converse-stream" if streamed else "/converse")
    assert upstream_request.stream == streamed
    assert upstream_request.headers == {
        "content-type": "application/json",
        "authorization": "Bearer <key>",
    }
    upstream_body = orjson.loads(upstream_request.body)
    check(case / "upstream_request.json", upstream_body, update_transcripts)
    assert request_problem(MODEL_ID, upstream_body, stream=streamed) is None


@pytest.mark.parametrize("case", cases(CASES))
def test_upstream_answer_is_bedrocks_shape(case: Path) -> None:
    """What each case feeds the translator is what botocore's model lets Bedrock send."""
    if case in STREAM_CASES:
        for item in upstream_events(case):
            assert output_problems("ConverseStreamOutput", item) == [], item
    elif case in JSON_CASES:
        answer = orjson.loads((case / "upstream.json").read_bytes())
        assert output_problems("ConverseResponse", answer) == []
    else:
        upstream = orjson.loads((case / "upstream_http.json").read_bytes())
        name = upstream["headers"]["x-amzn-errortype"].partition(":")[0]
        assert output_problems(name, upstream["body"]) == []
        error = service_model().shape_for(name).metadata["error"]
        assert error["httpStatusCode"] == upstream["status"]


@pytest.mark.parametrize("case", cases(STREAM_CASES))
def test_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.jsonl", client_view(case), update_transcripts)


@pytest.mark.parametrize("case", cases(JSON_CASES))
def test_non_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.json", non_stream_answer(case), update_transcripts)


@pytest.mark.parametrize("case", cases(HTTP_CASES))
def test_http_error(case: Path, update_transcripts: bool) -> None:
    upstream = orjson.loads((case / "upstream_http.json").read_bytes())
    body = orjson.dumps(upstream["body"])
    error = TRANSLATOR.parse_error(upstream["status"], body, upstream["headers"])
    check(case / "expected.json", error_view(error), update_transcripts)


@pytest.mark.parametrize("case", cases(STREAM_CASES))
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
    folded = fold_stream(client_view(stream_case))
    answer = non_stream_answer(json_case)
    if "usage" not in folded:  # the stream's client did not ask for usage
        del answer["usage"]
    assert parsed_arguments(folded) == parsed_arguments(answer)


def parsed_arguments(completion: dict[str, Any]) -> dict[str, Any]:
    """Streamed arguments are the model's own text (`{"city": "Paris"}`), non-stream ones our
    serialisation of `input` (`{"city":"Paris"}`): equal as JSON, not as strings."""
    for call in completion["choices"][0]["message"].get("tool_calls", ()):
        call["function"]["arguments"] = orjson.loads(call["function"]["arguments"])
    return completion


@pytest.mark.parametrize("case", cases(STREAM_CASES))
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    body = encoded_stream(case)
    whole = client_view(case)
    for pieces in byte_splits(body, case.name):
        assert client_view(case, pieces) == whole


def test_every_case_is_complete() -> None:
    assert len(CASES) >= 25
    for case in CASES:
        names = {path.name for path in case.iterdir()}
        assert {"client_request.json", "upstream_request.json", "SOURCE.md"} <= names, case
        forms = [
            {"upstream_events.json", "expected.jsonl"} <= names,
            {"upstream.json", "expected.json"} <= names,
            {"upstream_http.json", "expected.json"} <= names,
        ]
        assert forms.count(True) == 1, case


def test_a_call_made_under_tool_choice_none_is_dropped_and_counted() -> None:
    """tool_choice_none_history: the model calls a tool the client ruled out; both forms drop
    it and say so in the header (the transcripts show only the body)."""
    header = "x-toolrelay-dropped-tool-calls"
    json_case = TRANSCRIPTS / "tool_choice_none_history"
    json_context = context(json_case)
    TRANSLATOR.parse_response((json_case / "upstream.json").read_bytes(), json_context)
    assert json_context.headers == {header: "1"}

    stream_case = json_case.with_name("tool_choice_none_history_stream")
    stream_context = context(stream_case)
    stream = TRANSLATOR.stream(stream_context)
    for event in TRANSLATOR.framing().feed(encoded_stream(stream_case)):
        stream.feed(event)
    assert stream_context.headers == {header: "1"}
