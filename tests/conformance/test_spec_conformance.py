"""Our answers against OpenAI's own published schemas (issue 20 part 5).

Every suite already checks what it reads through the shared helpers (tests/helpers/
openai_stream.py, responses_stream.py) and the in-process client (tests/integration/
conftest.py), which validate each body, chunk and event with tests/conformance/spec.py. This
module runs representative answers of every kind through the same validation directly, so
the coverage does not depend on what other suites happen to send: chat completions and chunks
as the shared builders make them, every translator's transcripts (anthropic, gemini, openai
compatible servers) and the demo model, and the Responses face's objects and every event type
its stream writer emits."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai.types import CreateEmbeddingResponse

from app.faces.responses.output import (
    ItemIds,
    finished_response,
    output_items,
    response_shell,
)
from app.faces.responses.stored import deleted
from app.faces.responses.stream import ResponsesStreamWriter
from app.faces.responses.tools import ToolNames, chat_tools
from app.translators.base import Chunk
from app.translators.chunks import ChunkBuilder, make_completion, make_usage, tool_call
from app.translators.demo.model import serve as demo_serve
from tests.conformance import spec
from tests.conformance.extract_spec import ROOTS, closure
from tests.unit.translators.anthropic import test_transcripts as anthropic_cases
from tests.unit.translators.gemini import test_transcripts as gemini_cases

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts"
BUILDER = ChunkBuilder("chatcmpl-conformance", 1700000000, "any-model")
WEATHER = tool_call("call_1", "get_weather", '{"city": "Paris"}')
TIME = tool_call("call_2", "get_time", '{"timezone": "Europe/Paris"}')
USAGE = make_usage(12, 7, cached_tokens=4, reasoning_tokens=3)
WRITER_EVENTS = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.refusal.delta",
        "response.refusal.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
    }
)
"""Every event type app/faces/responses/stream.py writes (grep `"response.` there)."""


# -- the subset and the checker themselves -------------------------------------------------


def test_the_subset_is_exactly_what_the_script_extracts() -> None:
    subset = json.loads(spec.SUBSET.read_text())
    schemas = subset["components"]["schemas"]
    assert set(closure(schemas, ROOTS)) == set(schemas)  # every reference resolves, no extra
    assert re.fullmatch(r"[0-9a-f]{40}", subset["source"]["commit"])
    assert subset["source"]["repository"] == "https://github.com/openai/openai-openapi"


def test_every_extracted_schema_compiles_and_resolves() -> None:
    """Each component's validator builds and runs (the spec's few 2019-09 leftovers, such as
    `$recursiveAnchor: true`, are ignored by 2020-12 validation, as by OpenAI's generators)."""
    for name in json.loads(spec.SUBSET.read_text())["components"]["schemas"]:
        for probe in ({}, None, []):
            list(spec.validator(name).iter_errors(probe))


def test_the_checks_have_teeth() -> None:
    """What issue 20 found, and what this module fixed, is refused by the checker."""
    good = make_completion(BUILDER, content="hi", tool_calls=[], finish_reason="stop", usage=USAGE)
    spec.check_chat_completion(dict(good))
    without_logprobs = orjson.loads(orjson.dumps(good))
    del without_logprobs["choices"][0]["logprobs"]
    without_refusal = orjson.loads(orjson.dumps(good))
    del without_refusal["choices"][0]["message"]["refusal"]
    chunk_without_finish = BUILDER.content("x")
    del chunk_without_finish["choices"][0]["finish_reason"]
    for broken, check in (
        (without_logprobs, spec.check_chat_completion),
        (without_refusal, spec.check_chat_completion),
        (chunk_without_finish, spec.check_chat_chunk),
        (
            {**responses_of([BUILDER.content("x")])[-1]["response"], "usage": None},
            spec.check_response,
        ),
    ):
        with pytest.raises(spec.SpecViolation):
            check(broken)


def test_a_validator_is_compiled_once() -> None:
    assert spec.validator(spec.CHAT_CHUNK) is spec.validator(spec.CHAT_CHUNK)


# -- chat completions: the shared builders, every translator, the demo -------------------


@pytest.mark.parametrize(
    ("content", "calls", "finish"),
    [
        ("Hello!", [], "stop"),
        (None, [WEATHER], "tool_calls"),
        (None, [WEATHER, TIME], "tool_calls"),
        ("Let me check.", [WEATHER], "tool_calls"),
        ("Cut sh", [], "length"),
        (None, [], "content_filter"),
    ],
    ids=["text", "tool_call", "parallel_calls", "text_and_call", "length", "filtered"],
)
def test_completions_from_the_shared_builder(
    content: str | None, calls: list[Any], finish: Any
) -> None:
    for usage in (USAGE, None):
        completion = make_completion(
            BUILDER,
            content=content,
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
            reasoning="thinking...",
        )
        spec.check_chat_completion(dict(completion))


def test_every_chunk_the_shared_builder_makes() -> None:
    chunks = [
        BUILDER.role(),
        BUILDER.content("Hel"),
        BUILDER.reasoning("hmm"),
        BUILDER.thinking_block(0, {"type": "thinking", "thinking": "t", "signature": "s"}),
        BUILDER.tool_call_start(0, "call_1", "get_weather"),
        BUILDER.tool_call_arguments(0, '{"city"'),
        BUILDER.tool_call_start(1, "call_2", "get_time"),
        *(BUILDER.finish(reason) for reason in ("stop", "length", "tool_calls", "content_filter")),
        BUILDER.usage(USAGE),
    ]
    for chunk in chunks:
        spec.check_chat_chunk(chunk)


def transcript_answers() -> Iterator[tuple[str, Any]]:
    """Every answer the transcripts expect a client to get, non-stream and streamed."""
    for path in sorted(TRANSCRIPTS.glob("*/*/expected.json")):
        yield f"{path.parent.parent.name}/{path.parent.name}", orjson.loads(path.read_bytes())
    for path in sorted(TRANSCRIPTS.glob("*/*/expected.jsonl")):
        lines = path.read_text().splitlines()
        yield f"{path.parent.parent.name}/{path.parent.name}", [json.loads(x) for x in lines if x]
    for path in sorted((TRANSCRIPTS / "openai_compat").glob("*.json")):
        expected = orjson.loads(path.read_bytes()).get("expected")
        if expected is not None:
            yield f"openai_compat/{path.stem}", expected


def check_answer(answer: Any) -> None:
    """A completion, or a stream's chunks; the error views the transcripts record where a
    translation fails (`{"status", "headers", "body"}` or an error body) are not answers."""
    if isinstance(answer, list):
        for chunk in answer:
            if not is_error_view(chunk):
                spec.check_chat_chunk(chunk)
    elif answer.get("object") == "list":  # embeddings: not in the spec subset; the SDK's type
        CreateEmbeddingResponse.model_validate(answer)
    elif not is_error_view(answer):
        spec.check_chat_completion(answer)


def is_error_view(view: dict[str, Any]) -> bool:
    return "error" in view or "body" in view


def test_every_transcripts_expected_answer() -> None:
    """The transcript tests hold each translator's output equal to these files."""
    seen = 0
    for case, answer in transcript_answers():
        try:
            check_answer(answer)
        except spec.SpecViolation as violation:
            raise AssertionError(f"transcript {case}: {violation}") from None
        seen += 1
    assert seen > 50


@pytest.mark.parametrize("module", [anthropic_cases, gemini_cases], ids=["anthropic", "gemini"])
def test_every_transcript_translated_live(module: Any) -> None:
    """The translators' own output for every recorded upstream answer, as the code is now."""
    for case in module.JSON_CASES:
        check_answer(module.non_stream_answer(case))
    for case in module.STREAM_CASES:
        check_answer(module.client_view(case))


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"tools": [WEATHER_TOOL]},
        {"tools": [WEATHER_TOOL], "tool_choice": "required"},
        {"response_format": {"type": "json_object"}},
        {"max_tokens": 3},
    ],
    ids=["text", "tools", "required", "json_object", "max_tokens"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_demo_model(extra: dict[str, Any], stream: bool) -> None:
    body: dict[str, Any] = {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
    body |= extra
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    status, _, parts = demo_serve(orjson.dumps(body))
    assert status == 200
    if not stream:
        spec.check_chat_completion(orjson.loads(parts[0]))
        return
    for part in parts:
        payload = part.removeprefix(b"data: ").strip()
        if payload != b"[DONE]":
            spec.check_chat_chunk(orjson.loads(payload))


# -- the Responses API face ---------------------------------------------------------------

REQUEST: dict[str, Any] = {
    "model": "any-model",
    "input": "hi",
    "instructions": "Be brief.",
    "tools": [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
        {"type": "custom", "name": "apply_patch", "description": "Edit files."},
        {"type": "web_search"},  # hosted: left out of the request and of the echo
    ],
    "reasoning": {"effort": "low", "summary": "auto"},
    "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
    "metadata": {"team": "a"},
    "temperature": 0.5,
}


def names_for(body: dict[str, Any]) -> ToolNames:
    names = ToolNames()
    chat_tools(body.get("tools"), names)
    return names


def writer(body: dict[str, Any] = REQUEST) -> ResponsesStreamWriter:
    shell = response_shell(body, resp_id="resp_conf", created=1700000000, model="any-model")
    return ResponsesStreamWriter(shell, ItemIds("conf"), names_for(body), show_encrypted=False)


def responses_of(chunks: list[Chunk], *, fail: bool = False) -> list[dict[str, Any]]:
    stream = writer()
    events = stream.feed(chunks)
    events += stream.failed("server_error", "upstream broke off") if fail else stream.finish()
    return events


def custom_call_start() -> Chunk:
    names = names_for(REQUEST)
    upstream = next(name for name in names.origins if names.origin(name).kind == "custom")
    return BUILDER.tool_call_start(0, "call_c", upstream)


STREAMS = {
    "text": [BUILDER.role(), BUILDER.content("Hel"), BUILDER.content("lo"), BUILDER.finish("stop")],
    "reasoning": [BUILDER.reasoning("hmm"), BUILDER.content("Hi"), BUILDER.finish("stop")],
    "thinking_block": [
        BUILDER.thinking_block(0, {"type": "thinking", "thinking": "t", "signature": "s"}),
        BUILDER.content("Hi"),
        BUILDER.finish("stop"),
    ],
    "call": [
        BUILDER.tool_call_start(0, "call_1", "get_weather"),
        BUILDER.tool_call_arguments(0, '{"city":'),
        BUILDER.tool_call_arguments(0, ' "Paris"}'),
        BUILDER.finish("tool_calls"),
    ],
    "parallel": [
        BUILDER.tool_call_start(0, "call_1", "get_weather"),
        BUILDER.tool_call_arguments(0, "{}"),
        BUILDER.tool_call_start(1, "call_2", "get_weather"),
        BUILDER.tool_call_arguments(1, "{}"),
        BUILDER.finish("tool_calls"),
    ],
    "length": [BUILDER.content("Cut sh"), BUILDER.finish("length")],
    "refusal": [
        BUILDER.chunk({"refusal": "I can't "}),
        BUILDER.chunk({"refusal": "help with that."}),
        BUILDER.finish("stop"),
    ],
    "usage": [BUILDER.content("Hi"), BUILDER.finish("stop"), BUILDER.usage(USAGE)],
}


def test_every_event_type_the_stream_writer_emits() -> None:
    seen: set[str] = set()
    runs = [responses_of(chunks) for chunks in STREAMS.values()]
    runs.append(
        responses_of(
            [
                custom_call_start(),
                BUILDER.tool_call_arguments(0, '{"input":'),
                BUILDER.tool_call_arguments(0, ' "x"}'),
                BUILDER.finish("tool_calls"),
            ]
        )
    )
    runs.append(responses_of([BUILDER.content("Hal")], fail=True))
    runs.append(responses_of([], fail=True))
    for events in runs:
        for event in events:
            spec.check_response_event(event)
            seen.add(event["type"])
    assert spec.known_event_types() >= WRITER_EVENTS
    assert seen == WRITER_EVENTS, f"not exercised: {WRITER_EVENTS - seen}"


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_streamed_response_as_stored_and_fetched(name: str) -> None:
    stream = writer()
    stream.feed(STREAMS[name])
    stream.finish()
    spec.check_response(stream.final_response())


@pytest.mark.parametrize(
    ("message", "finish"),
    [
        ({"content": "Hello!"}, "stop"),
        ({"content": None, "tool_calls": [WEATHER, TIME]}, "tool_calls"),
        ({"content": "x", "reasoning_content": "hmm"}, "stop"),
        ({"content": None, "refusal": "I can't help with that."}, "stop"),
        ({"content": "Cut"}, "length"),
    ],
    ids=["text", "parallel_calls", "reasoning", "refusal", "length"],
)
def test_a_non_stream_response(message: dict[str, Any], finish: str) -> None:
    completion = {"choices": [{"message": {"role": "assistant", **message}}]}
    completion["choices"][0]["finish_reason"] = finish
    for body in (REQUEST, {"model": "m", "input": "hi"}):
        shell = response_shell(body, resp_id="resp_conf", created=1700000000, model="m")
        items = output_items(completion, ItemIds("conf"), names_for(body))
        spec.check_response(finished_response(shell, items, finish, USAGE))


def test_a_deleted_response_is_answered_as_openais_example() -> None:
    spec.check_like_example("deleteResponse", deleted("resp_conf"))


@pytest.mark.parametrize(
    "answer",
    [
        {"id": "resp_conf", "object": "response.deleted", "deleted": True},
        {"id": "resp_conf", "object": "response"},
        {"id": "resp_conf", "object": "response", "deleted": "true"},
    ],
    ids=["old_object", "no_deleted", "deleted_a_string"],
)
def test_a_delete_answer_unlike_the_example_is_refused(answer: dict[str, Any]) -> None:
    with pytest.raises(spec.SpecViolation):
        spec.check_like_example("deleteResponse", answer)
