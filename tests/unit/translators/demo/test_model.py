"""The demo upstream: `serve` answers like an OpenAI server, deterministically, and its output
passes the contract's stream checks and the openai translator it is served through."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.sse import SSEDecoder
from app.translators import demo
from app.translators.base import ResponseContext, Target
from app.translators.demo.model import DEMO_CREATED, serve, split_fragments
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/filter"},
                    "minItems": 1,
                },
            },
            "required": ["query", "filters"],
            "$defs": {
                "filter": {
                    "type": "object",
                    "properties": {
                        "field": {"enum": ["date", "site"]},
                        "value": {"type": "string"},
                    },
                    "required": ["field", "value"],
                }
            },
        },
    },
}
NO_PARAMETERS = {"type": "function", "function": {"name": "get_time"}}
ASK = {"role": "user", "content": "What's the weather in Paris?"}


def request(**fields: Any) -> dict[str, Any]:
    return {"model": "demo", "messages": [ASK], **fields}


def call(body: dict[str, Any], **kwargs: Any) -> tuple[int, str, list[bytes]]:
    return serve(orjson.dumps(body), **kwargs)


def completion(body: dict[str, Any]) -> dict[str, Any]:
    status, content_type, parts = call(body)
    assert (status, content_type, len(parts)) == (200, "application/json", 1)
    answer: dict[str, Any] = orjson.loads(parts[0])
    return answer


def stream(body: dict[str, Any]) -> list[dict[str, Any]]:
    status, content_type, parts = call({**body, "stream": True})
    assert (status, content_type) == (200, "text/event-stream")
    assert all(part.startswith(b"data: ") and part.endswith(b"\n\n") for part in parts)
    chunks, done = parse_sse_body(b"".join(parts))
    include_usage = bool(body.get("stream_options", {}).get("include_usage"))
    assert_openai_stream(chunks, include_usage=include_usage, done=done)
    return chunks


def message(answer: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = answer["choices"][0]["message"]
    return result


def finish_reason(answer: dict[str, Any]) -> str:
    reason: str = answer["choices"][0]["finish_reason"]
    return reason


def tool_loop_history() -> list[dict[str, Any]]:
    first = message(completion(request(tools=[WEATHER])))
    result = {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "18C sunny"}
    return [ASK, first, result]


# --- tool calls -------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [WEATHER, SEARCH], ids=["weather", "search-with-ref"])
def test_tool_call_arguments_satisfy_the_schema(tool: dict[str, Any]) -> None:
    answer = completion(request(tools=[tool]))
    (tool_call,) = message(answer)["tool_calls"]
    assert tool_call["type"] == "function"
    assert tool_call["function"]["name"] == tool["function"]["name"]
    arguments = json.loads(tool_call["function"]["arguments"])
    Draft202012Validator(tool["function"]["parameters"]).validate(arguments)
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", tool_call["id"])
    assert message(answer)["content"] is None
    assert finish_reason(answer) == "tool_calls"


def test_tool_call_uses_the_users_words() -> None:
    arguments = message(completion(request(tools=[WEATHER])))["tool_calls"][0]["function"]
    assert json.loads(arguments["arguments"])["city"] == "Paris"


def test_tool_without_parameters_gets_empty_object() -> None:
    arguments = message(completion(request(tools=[NO_PARAMETERS])))["tool_calls"][0]["function"]
    assert arguments["arguments"] == "{}"


@pytest.mark.parametrize(
    "tool_choice",
    [
        pytest.param({"type": "function", "function": {"name": "search"}}, id="named"),
        pytest.param(
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "required", "tools": [SEARCH]},
            },
            id="allowed-tools",
        ),
    ],
)
def test_tool_choice_picks_the_named_tool(tool_choice: dict[str, Any]) -> None:
    answer = completion(request(tools=[WEATHER, SEARCH], tool_choice=tool_choice))
    assert message(answer)["tool_calls"][0]["function"]["name"] == "search"


@pytest.mark.parametrize("tool_choice", ["auto", "required", None])
def test_otherwise_the_first_tool_is_called(tool_choice: str | None) -> None:
    answer = completion(request(tools=[WEATHER, SEARCH], tool_choice=tool_choice))
    assert message(answer)["tool_calls"][0]["function"]["name"] == "get_weather"


def test_tool_choice_none_answers_with_text() -> None:
    answer = completion(request(tools=[WEATHER], tool_choice="none"))
    assert "tool_calls" not in message(answer)
    assert "ToolRelay demo model" in message(answer)["content"]
    assert finish_reason(answer) == "stop"


# --- text -------------------------------------------------------------------------------------


def test_text_answer_names_the_demo_and_echoes_the_user() -> None:
    content = message(completion(request()))["content"]
    assert "ToolRelay demo model" in content
    assert "What's the weather in Paris?" in content


def test_long_user_text_is_echoed_truncated() -> None:
    said = " ".join(f"word{i}" for i in range(50))
    content = message(
        completion({"model": "demo", "messages": [{"role": "user", "content": said}]})
    )["content"]
    assert "word11..." in content
    assert "word12" not in content


def test_answer_after_a_tool_result_quotes_it() -> None:
    answer = completion(request(messages=tool_loop_history(), tools=[WEATHER]))
    assert message(answer)["content"] == "The get_weather tool returned: 18C sunny."
    assert finish_reason(answer) == "stop"


def test_parallel_tool_results_are_all_quoted() -> None:
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{}"},
        },
        {"id": "call_b", "type": "function", "function": {"name": "search", "arguments": "{}"}},
    ]
    history = [
        ASK,
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "3 hits"}]},
    ]
    content = message(completion(request(messages=history)))["content"]
    assert content == "The get_weather tool returned: 18C. The search tool returned: 3 hits."


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        pytest.param({"max_tokens": 5}, 5, id="max_tokens"),
        pytest.param({"max_completion_tokens": 3, "max_tokens": 9}, 3, id="completion-wins"),
        pytest.param({"max_tokens": 0}, 0, id="zero"),
    ],
)
def test_max_tokens_cuts_text_with_length(limits: dict[str, int], words: int) -> None:
    answer = completion(request(**limits))
    content = message(answer)["content"]
    assert len((content or "").split()) == words
    assert finish_reason(answer) == "length"
    assert answer["usage"]["completion_tokens"] == words


def test_usage_counts_words() -> None:
    body = {
        "model": "demo",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": [{"type": "text", "text": "one two three"}]},
        ],
    }
    answer = completion(body)
    usage = answer["usage"]
    assert usage["prompt_tokens"] == 5
    assert usage["completion_tokens"] == len(message(answer)["content"].split())
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


# --- streams ----------------------------------------------------------------------------------


CASES = {
    "tool-call": request(tools=[WEATHER, SEARCH]),
    "ref-tool-call": request(tools=[SEARCH]),
    "text": request(),
    "tool-result": request(messages=tool_loop_history(), tools=[WEATHER]),
    "length": request(max_tokens=4),
}


@pytest.mark.parametrize("body", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("include_usage", [True, False], ids=["usage", "no-usage"])
def test_stream_folds_to_the_non_stream_answer(body: dict[str, Any], include_usage: bool) -> None:
    chunks = stream({**body, "stream_options": {"include_usage": include_usage}})
    expected = completion(body)
    if not include_usage:
        del expected["usage"]
    assert fold_stream(chunks) == expected


def test_stream_sends_arguments_in_several_fragments() -> None:
    chunks = stream(request(tools=[WEATHER]))
    fragments = [
        delta_call["function"]["arguments"]
        for chunk in chunks
        for delta_call in chunk["choices"][0]["delta"].get("tool_calls", [])
        if "id" not in delta_call
    ]
    assert len(fragments) >= 3
    # Some cut falls inside a word (a key or a string value), not on a JSON token boundary.
    assert any(a[-1].isalnum() and b[0].isalnum() for a, b in itertools.pairwise(fragments))
    assert not any(chunk["choices"][0]["delta"].get("content") for chunk in chunks)


def test_stream_text_comes_word_by_word() -> None:
    contents = [c["choices"][0]["delta"].get("content") for c in stream(request())[1:-1]]
    assert all(re.fullmatch(r"\s?\S+", content) for content in contents)


def test_stream_without_include_usage_has_no_usage_chunk() -> None:
    assert all(chunk["choices"] for chunk in stream(request()))


@pytest.mark.parametrize(("text", "count"), [("", 1), ("{}", 1), ('{"a":1}', 4), ("x" * 100, 19)])
def test_split_fragments_concatenate_back(text: str, count: int) -> None:
    fragments = split_fragments(text)
    assert "".join(fragments) == text
    assert len(fragments) == count


# --- determinism, ids, errors -----------------------------------------------------------------


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "non-stream"])
def test_same_body_same_bytes(streamed: bool) -> None:
    body = orjson.dumps(request(tools=[WEATHER], stream=streamed))
    assert serve(body) == serve(body)


def test_ids_and_created_are_deterministic_and_injectable() -> None:
    answer = completion(request())
    assert answer["created"] == DEMO_CREATED
    assert re.fullmatch(r"chatcmpl-demo-[0-9a-f]{16}", answer["id"])
    assert completion(request(user="someone else"))["id"] != answer["id"]
    _, _, parts = call(request(), created=42, completion_id="chatcmpl-fixed")
    assert orjson.loads(parts[0])["id"] == "chatcmpl-fixed"
    assert orjson.loads(parts[0])["created"] == 42


def test_model_is_echoed_and_unknown_fields_are_tolerated() -> None:
    answer = completion(request(model="demo-upstream", temperature=0.2, metadata={"a": "b"}))
    assert answer["model"] == "demo-upstream"


@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b'"text"', b"\xff"])
def test_body_that_is_not_a_json_object_is_a_400(body: bytes) -> None:
    status, content_type, parts = serve(body)
    assert (status, content_type) == (400, "application/json")
    error = orjson.loads(b"".join(parts))
    assert set(error) == {"error"}
    assert error["error"]["type"] == "invalid_request_error"
    assert (error["error"]["param"], error["error"]["code"]) == (None, None)
    assert error["error"]["message"]


def test_malformed_fields_are_read_tolerantly() -> None:
    answer = completion({"model": 3, "messages": "hi", "tools": [1, {"function": 2}]})
    assert answer["model"] == "demo"
    assert finish_reason(answer) == "stop"


# --- through the openai translator, as the proxy serves it ------------------------------------


def _through_translator(client_body: dict[str, Any]) -> list[dict[str, Any]]:
    chat_request = parse_chat_request(orjson.dumps(client_body))
    target = Target("demo", "demo", ProviderConfig(kind="demo"), "demo")
    upstream = demo.TRANSLATOR.build_request(chat_request, target)
    assert demo.TRANSLATOR.local_upstream is not None
    path = upstream.url.removeprefix(target.provider.base_url)
    status, _, parts = demo.TRANSLATOR.local_upstream(path, upstream.body)
    assert status == 200
    ctx = ResponseContext("chatcmpl-proxy", 1, "demo", chat_request)
    translator = demo.TRANSLATOR.stream(ctx)
    decoder = SSEDecoder()
    chunks = [
        chunk for part in parts for event in decoder.feed(part) for chunk in translator.feed(event)
    ]
    return chunks + translator.finish()


def test_stream_passes_through_the_openai_translator() -> None:
    body = request(tools=[WEATHER], stream=True, stream_options={"include_usage": True})
    chunks = _through_translator(body)
    assert_openai_stream(chunks, include_usage=True)
    arguments = fold_stream(chunks)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert json.loads(arguments["arguments"])["city"] == "Paris"


def asks(words: str) -> dict[str, Any]:
    return {"model": "demo-sloppy", "messages": [{"role": "user", "content": words}]}


def test_demo_text_writes_its_call_as_hermes_text_streamed_in_pieces() -> None:
    body = {**request(tools=[WEATHER]), "model": "demo-text"}
    answer = completion(body)
    content = message(answer)["content"]
    assert content.startswith("<tool_call>\n")
    assert content.endswith("\n</tool_call>")
    written = json.loads(content.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
    assert written["name"] == "get_weather"
    Draft202012Validator(WEATHER["function"]["parameters"]).validate(written["arguments"])
    assert "tool_calls" not in message(answer)
    assert finish_reason(answer) == "stop"
    streamed = stream(body)
    assert (
        len([c for c in streamed if c["choices"] and c["choices"][0]["delta"].get("content")]) > 3
    )
    assert fold_stream(streamed)["choices"][0]["message"]["content"] == content


def test_demo_sloppy_is_valid_broken_or_text_by_request_and_always_the_same() -> None:
    validator = Draft202012Validator(WEATHER["function"]["parameters"])
    seen = set()
    for number in range(30):
        body = {**asks(f"weather in city number {number}"), "tools": [WEATHER]}
        answer = completion(body)
        assert completion(body) == answer
        calls = message(answer).get("tool_calls")
        if calls is None:
            seen.add("text")
            written = json.loads(message(answer)["content"])
            assert set(written) == {"name", "arguments"}
        else:
            valid = validator.is_valid(json.loads(calls[0]["function"]["arguments"]))
            seen.add("valid" if valid else "broken")
    assert seen == {"valid", "broken", "text"}
