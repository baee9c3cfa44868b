"""Every behaviour in tests/transcripts/anthropic/: the exact body we send upstream, and the
client's view of the answer (stream and non-stream), checked against the contract's invariants.

A case may hold a `target.json`: settings of the model the case runs under (for instance
`{"structured_output": "tool"}`), as the router would set them on its Target.

`pytest --update-transcripts` rewrites upstream_request.json and expected.* from the code;
review the diff against PROTOCOLS.md before keeping it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import ProxyError
from app.openai_types import ChatRequest, parse_chat_request
from app.sse import SSEDecoder
from app.translators.anthropic import TRANSLATOR
from app.translators.anthropic.request import build_request
from app.translators.base import ResponseContext, Target
from tests.helpers.byte_splits import byte_splits
from tests.helpers.openai_stream import assert_openai_stream, fold_stream
from tests.helpers.transcripts import check

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "anthropic"
CASES = sorted(path for path in TRANSCRIPTS.iterdir() if path.is_dir())
STREAM_CASES = [case for case in CASES if (case / "upstream.sse").exists()]
JSON_CASES = [case for case in CASES if (case / "upstream.json").exists()]
# A `<behaviour>_stream` directory and a `<behaviour>` one hold the same answer in both forms.
PAIRS = [
    (case, case.with_name(case.name.removesuffix("_stream")))
    for case in STREAM_CASES
    if case.name.endswith("_stream") and case.with_name(case.name.removesuffix("_stream")).is_dir()
]

TARGET = Target(
    model_name="claude",
    provider_name="anthropic",
    provider=ProviderConfig(kind="anthropic", api_key="<key>"),
    upstream_model="claude-sonnet-4-5",
)


def case_id(case: Path) -> str:
    return case.name


def client_request(case: Path) -> ChatRequest:
    return parse_chat_request((case / "client_request.json").read_bytes())


def target(case: Path) -> Target:
    settings = case / "target.json"
    if not settings.exists():
        return TARGET
    return dataclasses.replace(TARGET, **orjson.loads(settings.read_bytes()))


def context(case: Path) -> ResponseContext:
    request = client_request(case)
    return ResponseContext("chatcmpl-test", 1700000000, request.model, request, target=target(case))


def client_view(case: Path, pieces: Iterable[bytes] | None = None) -> list[dict[str, Any]]:
    """The chunks a client gets for the case's upstream.sse, fed through the real decoder in
    the given pieces; if the translator raises, the error body the relay would send ends it."""
    stream = TRANSLATOR.stream(context(case))
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
        view.append(error.body())
    return view


def non_stream_answer(case: Path) -> dict[str, Any]:
    return TRANSLATOR.parse_response((case / "upstream.json").read_bytes(), context(case))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_upstream_request(case: Path, update_transcripts: bool) -> None:
    upstream_request = build_request(client_request(case), target(case))
    assert upstream_request.url == "https://api.anthropic.com/v1/messages"
    assert upstream_request.stream == (case in STREAM_CASES)
    upstream_body = orjson.loads(upstream_request.body)
    check(case / "upstream_request.json", upstream_body, update_transcripts)


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.jsonl", client_view(case), update_transcripts)


@pytest.mark.parametrize("case", JSON_CASES, ids=case_id)
def test_non_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.json", non_stream_answer(case), update_transcripts)


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_stream_keeps_the_contract(case: Path) -> None:
    view = client_view(case)
    if "error" in view[-1]:
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
    json_content = (case_extra(json_case).get("response_format") or {}).get("type") in JSON_TYPES
    assert parsed_arguments(folded, json_content) == parsed_arguments(answer, json_content)


JSON_TYPES = ("json_object", "json_schema")


def case_extra(case: Path) -> dict[str, Any]:
    return client_request(case).model_extra or {}


def parsed_arguments(completion: dict[str, Any], json_content: bool = False) -> dict[str, Any]:
    """Streamed arguments are Anthropic's own text (`{"city": "Paris"}`), non-stream ones our
    serialisation of `input` (`{"city":"Paris"}`): equal as JSON, not as strings. So is the
    content of an answer tool's input (`structured_output: tool`)."""
    message = completion["choices"][0]["message"]
    for call in message.get("tool_calls", ()):
        call["function"]["arguments"] = orjson.loads(call["function"]["arguments"])
    if json_content and message.get("content"):
        message["content"] = orjson.loads(message["content"])
    return completion


@pytest.mark.parametrize("case", STREAM_CASES, ids=case_id)
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    body = (case / "upstream.sse").read_bytes()
    whole = client_view(case)
    for pieces in byte_splits(body, case.name):
        assert client_view(case, pieces) == whole


def test_every_case_is_complete() -> None:
    assert len(CASES) >= 20
    for case in CASES:
        names = {path.name for path in case.iterdir()}
        assert {"client_request.json", "upstream_request.json", "SOURCE.md"} <= names, case
        assert ({"upstream.sse", "expected.jsonl"} <= names) != (
            {"upstream.json", "expected.json"} <= names
        ), case
