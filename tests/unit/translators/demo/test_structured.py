"""The demo's structured output and forced tool loops: `response_format` answers are JSON valid
against the schema (the schemas frameworks send included), streamed or not, and a forced
tool_choice walks through the offered tools so an output-tool framework finishes offline."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal, Optional

import jsonschema
import orjson
import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, Field

from app.translators.demo.model import serve
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body

ASK = {"role": "user", "content": "Plan a trip to Lisbon for two"}
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME: dict[str, Any] = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object"}},
}
FINAL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "final_result",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    },
}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(min_length=12, max_length=40)
    postcode: str = Field(pattern=r"^\d{4}-\d{3}$")


class Pet(BaseModel):
    kind: Literal["cat", "dog"]
    name: str


class Person(BaseModel):
    """Nested models, Optional fields, enums, lists, bounds and a recursive reference."""

    name: str
    age: int = Field(ge=18, le=99)
    score: float = Field(gt=0, lt=1)
    colour: Colour
    address: Address
    nickname: Optional[str] = None  # noqa: UP045 - the Optional spelling frameworks use
    pets: list[Pet] = Field(min_length=2, max_length=3)
    tags: list[str] = []
    manager: Person | None = None
    favourite: Pet | Address


SCHEMAS: dict[str, Any] = {
    "pydantic": Person.model_json_schema(),
    "pydantic-strict": to_strict_json_schema(Person),
    "ref-defs": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
        "required": ["items"],
        "$defs": {
            "item": {
                "type": "object",
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}[0-9]{2}$"}},
                "required": ["sku"],
                "additionalProperties": False,
            }
        },
    },
    "any-of-const": {
        "anyOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]},
        ]
    },
    "one-of-numbers": {"oneOf": [{"type": "integer"}, {"type": "number", "multipleOf": 0.5}]},
    "bounds": {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 100, "maximum": 102},
            "x": {"type": "number", "minimum": -3.5, "maximum": -3.25},
            "code": {"type": "string", "minLength": 20, "maxLength": 21},
            "choice": {"enum": ["left", "right", 3]},
            "list": {"type": "array", "items": {"type": "boolean"}, "minItems": 4},
        },
        "required": ["n", "x", "code", "choice", "list"],
        "additionalProperties": False,
    },
    "closed-with-required": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    "array-root": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    "empty": {},
}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "demo", "messages": [ASK], **fields}


def json_schema(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}


def completion(request: dict[str, Any]) -> dict[str, Any]:
    status, _, parts = serve(orjson.dumps(request))
    assert status == 200
    answer: dict[str, Any] = orjson.loads(parts[0])
    return answer


def streamed(request: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The folded stream and the number of content deltas it had."""
    _, _, parts = serve(orjson.dumps({**request, "stream": True}))
    chunks, done = parse_sse_body(b"".join(parts))
    assert_openai_stream(chunks, include_usage=False, done=done)
    deltas = sum(1 for chunk in chunks if chunk["choices"][0]["delta"].get("content"))
    return fold_stream(chunks), deltas


def choice(answer: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = answer["choices"][0]
    return first


def called(answer: dict[str, Any]) -> list[str]:
    return [call["function"]["name"] for call in choice(answer)["message"].get("tool_calls") or []]


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_json_schema_answer_validates_streamed_or_not(schema: Any) -> None:
    request = body(response_format=json_schema(schema))

    whole = choice(completion(request))
    folded, deltas = streamed(request)

    assert whole["finish_reason"] == "stop"
    assert "tool_calls" not in whole["message"]
    value = json.loads(whole["message"]["content"])
    jsonschema.validate(
        value, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    assert choice(folded)["message"]["content"] == whole["message"]["content"]
    assert choice(folded)["finish_reason"] == "stop"
    assert deltas >= 2 or len(whole["message"]["content"]) < 3


@pytest.mark.parametrize("schema", ["pydantic", "pydantic-strict"])
def test_pydantic_schemas_parse_back_into_the_model(schema: str) -> None:
    content = choice(completion(body(response_format=json_schema(SCHEMAS[schema]))))["message"]

    person = Person.model_validate_json(content["content"])

    assert len(person.pets) >= 2


def test_users_words_fill_free_text_properties() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    content = choice(completion(body(response_format=json_schema(schema))))["message"]["content"]
    assert json.loads(content) == {"query": "Plan a trip to Lisbon for two"}


def test_json_object_answer_is_an_object_and_ignores_max_tokens() -> None:
    request = body(response_format={"type": "json_object"}, max_tokens=2)

    whole = choice(completion(request))
    folded, _ = streamed(request)

    value = json.loads(whole["message"]["content"])
    assert isinstance(value, dict)
    assert "ToolRelay demo model" in value["answer"]
    assert whole["finish_reason"] == "stop"
    assert choice(folded)["message"]["content"] == whole["message"]["content"]


def test_text_response_format_answers_prose() -> None:
    content = choice(completion(body(response_format={"type": "text"})))["message"]["content"]
    assert content.startswith("Hello from the ToolRelay demo model!")


def test_same_request_same_bytes() -> None:
    request = orjson.dumps(body(response_format=json_schema(SCHEMAS["pydantic"]), stream=True))
    assert serve(request) == serve(request)


def test_auto_tools_are_called_first_then_the_answer_is_json() -> None:
    schema = {"type": "object", "properties": {"summary": {"type": "string"}}}
    request = body(tools=[WEATHER], response_format=json_schema(schema))

    first = completion(request)
    history = [ASK, choice(first)["message"], result_of(first, "21C")]
    answer = choice(completion({**request, "messages": history}))

    assert called(first) == ["get_weather"]
    assert json.loads(answer["message"]["content"]) == {"summary": "example"}


def test_tool_choice_none_with_json_object_answers_json() -> None:
    request = body(tools=[WEATHER], tool_choice="none", response_format={"type": "json_object"})
    assert isinstance(json.loads(choice(completion(request))["message"]["content"]), dict)


def result_of(answer: dict[str, Any], content: str) -> dict[str, Any]:
    """The tool message answering `answer`'s (only) call."""
    call_id = choice(answer)["message"]["tool_calls"][0]["id"]
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def run_loop(request: dict[str, Any], turns: int) -> list[str]:
    """The names the demo calls over `turns` rounds of a client's tool loop."""
    history: list[dict[str, Any]] = [ASK]
    names: list[str] = []
    for _ in range(turns):
        answer = completion({**request, "messages": history})
        names += called(answer)
        history += [choice(answer)["message"], result_of(answer, "done")]
    return names


@pytest.mark.parametrize(
    "tool_choice",
    [
        "required",
        {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [TIME, FINAL]}},
    ],
    ids=["required", "allowed-tools-required"],
)
def test_forced_choice_walks_through_the_tools_then_repeats_the_last(tool_choice: Any) -> None:
    request = body(tools=[WEATHER, TIME, FINAL], tool_choice=tool_choice)
    expected = ["get_weather", "get_time", "final_result", "final_result"]
    if isinstance(tool_choice, dict):
        expected = ["get_time", "final_result", "final_result"]

    assert run_loop(request, len(expected)) == expected


def test_forced_choice_counts_calls_replayed_as_text() -> None:
    """smolagents' ToolCallingAgent sends its past calls back as assistant text and their
    results as user messages: the tool named there counts as called, so `final_answer` comes
    next and its loop ends offline."""
    replayed = (
        "Calling tools:\n[{'id': 'call_1', 'type': 'function', 'function': "
        "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}}]"
    )
    history = [
        ASK,
        {"role": "assistant", "content": [{"type": "text", "text": replayed}]},
        {"role": "user", "content": [{"type": "text", "text": "Observation:\nsunny"}]},
    ]
    request = body(tools=[WEATHER, FINAL], tool_choice="required", messages=history)
    assert called(completion(request)) == ["final_result"]


def test_named_choice_keeps_calling_the_named_tool() -> None:
    named = {"type": "function", "function": {"name": "get_time"}}
    request = body(tools=[WEATHER, TIME, FINAL], tool_choice=named)
    assert run_loop(request, 2) == ["get_time", "get_time"]


def test_forced_call_after_results_validates_and_streams_equal() -> None:
    request = body(tools=[WEATHER, FINAL], tool_choice="required")
    first = completion(request)
    later = {**request, "messages": [ASK, choice(first)["message"], result_of(first, "ok")]}

    whole = completion(later)
    folded, _ = streamed(later)

    (call,) = choice(whole)["message"]["tool_calls"]
    assert call["function"]["name"] == "final_result"
    jsonschema.validate(json.loads(call["function"]["arguments"]), FINAL["function"]["parameters"])
    assert choice(folded)["message"]["tool_calls"] == [call]
    assert choice(whole)["finish_reason"] == "tool_calls"


def test_auto_after_results_still_answers_with_text() -> None:
    request = body(tools=[WEATHER, FINAL])
    first = completion(request)
    history = [ASK, choice(first)["message"], result_of(first, "21C")]
    answer = choice(completion({**request, "messages": history}))
    assert answer["message"]["content"] == "The get_weather tool returned: 21C."
