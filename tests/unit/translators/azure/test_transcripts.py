"""Every behaviour in tests/transcripts/azure/: Azure OpenAI's own shapes (a first chunk of
`choices: []` with `prompt_filter_results`, `content_filter_results` beside deltas, the content
filter's 400 and `finish_reason: content_filter`, the 429 with `retry-after`) and what the client
gets instead: OpenAI's stream and answers. For each, the deployment URL and exact body we send,
and the client's view: chunks for a stream, from the translator and from the relay's
pass-through bytes alike, the same at every byte split; the completion; the error.

`pytest --update-transcripts` rewrites upstream_request.json and expected.* from the code;
review the diff against PROTOCOLS.md H.3 before keeping it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.openai_types import ChatRequest, parse_chat_request
from app.relay.pass_through import PassThrough
from app.sse import OPENAI_ENCODER, SSEDecoder, SSEEvent
from app.translators.azure import TRANSLATOR
from app.translators.base import EDITED, NativeRequest, RelayedJSON, ResponseContext, Target
from tests.helpers.byte_splits import byte_splits
from tests.helpers.openai_stream import (
    assert_openai_completion,
    assert_openai_stream,
    fold_stream,
    parse_sse_body,
)
from tests.helpers.transcripts import (
    Cases,
    assert_complete,
    case_id,
    check,
    error_view,
    sse_view,
)

TRANSCRIPTS = Path(__file__).parents[3] / "transcripts" / "azure"
CASES = Cases(TRANSCRIPTS)
EMBEDDINGS = TRANSCRIPTS / "embeddings"
CHAT_CASES = [case for case in CASES.all if case != EMBEDDINGS]
CHAT_JSON_CASES = [case for case in CASES.json if case != EMBEDDINGS]
BASE = "https://my-resource.openai.azure.com"
DEPLOYMENT_URL = f"{BASE}/openai/deployments/my-gpt-4o/{{}}?api-version=2024-10-21"
TARGET = Target(
    "gpt-azure",
    "az",
    ProviderConfig(kind="azure", base_url=BASE, api_key="<key>", api_version="2024-10-21"),
    "my-gpt-4o",
)
AZURE_ADDITIONS = ("prompt_filter_results", "content_filter_results", "content_filter_offsets")


def client_request(case: Path) -> ChatRequest:
    return parse_chat_request((case / "client_request.json").read_bytes())


def context(case: Path) -> ResponseContext:
    request = client_request(case)
    return ResponseContext("chatcmpl-test", 1700000000, request.model, request, target=TARGET)


def client_view(case: Path, pieces: list[bytes] | None = None) -> list[dict[str, Any]]:
    """The chunks the stream translator makes of the case's upstream.sse."""
    body = (case / "upstream.sse").read_bytes()
    return sse_view(lambda: TRANSLATOR.stream(context(case)), pieces or [body])


def relay_view(case: Path, pieces: list[bytes] | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The chunks a client decodes from the relay's bytes: whole events the translator lets
    through go as Azure wrote them (the pass-through's fast path), the rest translated."""
    ctx = context(case)
    stream = TRANSLATOR.stream(ctx)
    decoder = SSEDecoder()
    fast_path = getattr(stream, "fast_path")  # noqa: B009 (the relay's own lookup)

    def translated(upstream_bytes: bytes) -> bytes:
        chunks = [chunk for event in decoder.feed(upstream_bytes) for chunk in stream.feed(event)]
        return OPENAI_ENCODER.encode(chunks) if chunks else b""

    relay = PassThrough(fast_path(), ctx.model, translated, decoder)
    sent = b"".join(
        relay.frames(piece) for piece in pieces or [(case / "upstream.sse").read_bytes()]
    )
    tail = [chunk for event in decoder.flush() for chunk in stream.feed(event)] + stream.finish()
    sent += (OPENAI_ENCODER.encode(tail) if tail else b"") + OPENAI_ENCODER.end()
    return parse_sse_body(sent)


def non_stream_answer(case: Path) -> dict[str, Any]:
    return TRANSLATOR.parse_response((case / "upstream.json").read_bytes(), context(case))


@pytest.mark.parametrize("case", CHAT_CASES, ids=case_id)
def test_upstream_request(case: Path, update_transcripts: bool) -> None:
    upstream_request = TRANSLATOR.build_request(client_request(case), TARGET)
    assert upstream_request.url == DEPLOYMENT_URL.format("chat/completions")
    assert upstream_request.stream == (case in CASES.stream)
    assert upstream_request.headers["api-key"] == "<key>"
    assert "authorization" not in {name.lower() for name in upstream_request.headers}
    check(case / "upstream_request.json", orjson.loads(upstream_request.body), update_transcripts)


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_stream(case: Path, update_transcripts: bool) -> None:
    check(case / "expected.jsonl", client_view(case), update_transcripts)


@pytest.mark.parametrize("case", CHAT_JSON_CASES, ids=case_id)
def test_non_stream(case: Path, update_transcripts: bool) -> None:
    answer = non_stream_answer(case)
    check(case / "expected.json", answer, update_transcripts)
    assert_openai_completion(answer)


@pytest.mark.parametrize("case", CASES.http, ids=case_id)
def test_http_error(case: Path, update_transcripts: bool) -> None:
    upstream = orjson.loads((case / "upstream_http.json").read_bytes())
    error = TRANSLATOR.parse_error(
        upstream["status"], orjson.dumps(upstream["body"]), upstream["headers"]
    )
    check(case / "expected.json", error_view(error), update_transcripts)


def test_a_content_filter_refusal_is_our_400_content_filter_with_azures_message() -> None:
    expected = orjson.loads((TRANSCRIPTS / "content_filter/expected.json").read_bytes())
    assert expected["status"] == 400
    assert expected["body"]["error"]["code"] == "content_filter"
    assert "content management policy" in expected["body"]["error"]["message"]


def test_a_rate_limit_keeps_azures_retry_after() -> None:
    expected = orjson.loads((TRANSCRIPTS / "rate_limited/expected.json").read_bytes())
    assert expected["status"] == 429
    assert expected["headers"] == {"retry-after": "6", "retry-after-ms": "5420"}


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_stream_keeps_the_contract(case: Path) -> None:
    view = client_view(case)
    assert_openai_stream(view, include_usage=client_request(case).include_usage)
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in view)
    assert not any("prompt_filter_results" in chunk for chunk in view)


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_no_azure_addition_reaches_the_client(case: Path) -> None:
    """Issue 30: neither the prompt's annotation nor `content_filter_results` beside a delta,
    whether a chunk is translated or would take the pass-through's fast path."""
    relayed, _ = relay_view(case)
    for view in (client_view(case), relayed):
        for chunk in view:
            assert not set(AZURE_ADDITIONS) & set(chunk)
            for choice in chunk["choices"]:
                assert not set(AZURE_ADDITIONS) & set(choice), choice


def test_a_delta_with_filter_annotations_reaches_the_client_without_them() -> None:
    """Shapes beyond the recorded ones: the prompt's annotation on a chunk with a delta, and
    `content_filter_offsets` beside one. The fast path's check removes them and marks the
    chunk EDITED (the relay encodes it instead of sending Azure's bytes); the translation
    removes them too; both keep the delta."""
    stream = TRANSLATOR.stream(context(TRANSCRIPTS / "text_stream"))
    passes = getattr(stream, "fast_path")()  # noqa: B009 (the relay's own lookup)
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    role = {"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}
    stream.feed(SSEEvent(orjson.dumps({**head, "choices": [role]}).decode()))
    text = {"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}
    assert passes({**head, "choices": [text]}) is not None
    annotated = [
        {**head, "choices": [text], "prompt_filter_results": [{"prompt_index": 0}]},
        {**head, "choices": [{**text, "content_filter_offsets": {"start_offset": 0}}]},
        {**head, "choices": [{**text, "content_filter_results": {}}]},
    ]
    for chunk in annotated:
        checked = orjson.loads(orjson.dumps(chunk))
        assert passes(checked) is not None
        assert checked.pop(EDITED) is True
        assert checked == {**head, "choices": [text]}
        (sent,) = stream.feed(SSEEvent(orjson.dumps(chunk).decode()))
        assert not set(AZURE_ADDITIONS) & set(sent)
        assert sent["choices"] == [text]


def test_a_filtered_stream_ends_with_content_filter() -> None:
    view = client_view(TRANSCRIPTS / "content_filter_stream")
    assert fold_stream(view)["choices"][0]["finish_reason"] == "content_filter"
    assert fold_stream(view)["choices"][0]["message"]["content"] == (
        "The two knights circled each other"
    )


PAIRS = [(stream, answer) for stream, answer in CASES.pairs if answer in CASES.json]


@pytest.mark.parametrize(("stream_case", "json_case"), PAIRS, ids=lambda case: case.name)
def test_folded_stream_equals_the_non_stream_answer(stream_case: Path, json_case: Path) -> None:
    """The same answer streamed and not: the same message and finish (Azure's filter results
    aside, which the non-stream answer relays as they came)."""
    (folded,) = fold_stream(client_view(stream_case))["choices"]
    (answered,) = non_stream_answer(json_case)["choices"]
    assert folded["finish_reason"] == answered["finish_reason"]
    for field in ("content", "tool_calls"):
        assert folded["message"].get(field) == answered["message"].get(field)


@pytest.mark.parametrize("case", CASES.stream, ids=case_id)
def test_any_byte_split_gives_the_same_chunks(case: Path) -> None:
    """Through the translator, and through the relay's pass-through (whose fast path sends
    whole events as they came): the same chunks, however the bytes are split."""
    body = (case / "upstream.sse").read_bytes()
    whole = client_view(case)
    assert relay_view(case) == (whole, True)
    for pieces in byte_splits(body, case.name):
        assert client_view(case, pieces) == whole
        assert relay_view(case, pieces) == (whole, True)


def test_embeddings_go_to_the_deployment_and_come_back_as_openai_s(
    update_transcripts: bool,
) -> None:
    body = orjson.loads((EMBEDDINGS / "client_request.json").read_bytes())
    translator = TRANSLATOR.embeddings
    assert translator is not None
    relayed = translator(NativeRequest("/v1/embeddings", body, {}))
    chat = parse_chat_request(
        orjson.dumps({"model": body["model"], "messages": [{"role": "user", "content": "-"}]})
    )
    upstream_request = relayed.build_request(chat, TARGET)
    assert upstream_request.url == DEPLOYMENT_URL.format("embeddings")
    assert upstream_request.headers["api-key"] == "<key>"
    sent = orjson.loads(upstream_request.body)
    check(EMBEDDINGS / "upstream_request.json", sent, update_transcripts)
    ctx = ResponseContext("embd-test", 1700000000, body["model"], chat, target=TARGET)
    answer = relayed.parse_response((EMBEDDINGS / "upstream.json").read_bytes(), ctx)
    # The client gets Azure's own bytes with `model` patched (RelayedJSON), else the dict.
    sent_back = orjson.loads(answer.raw) if isinstance(answer, RelayedJSON) else answer
    check(EMBEDDINGS / "expected.json", sent_back, update_transcripts)
    assert sent_back["model"] == "embed-azure"
    assert [item["index"] for item in sent_back["data"]] == [0, 1]


def test_every_case_is_complete() -> None:
    assert len(CASES.all) >= 9
    assert_complete(CASES)
