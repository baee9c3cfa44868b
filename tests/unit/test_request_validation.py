"""The edge: what a valid chat request is, and the 400s (with `param`) for what is not."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import InvalidRequest
from app.openai_types import chat_request_from_wire, parse_chat_request

USER = {"role": "user", "content": "hi"}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def body(**fields: Any) -> bytes:
    return orjson.dumps({"model": "m", "messages": [USER], **fields})


def test_valid_request_keeps_the_wire_body_with_unknown_fields() -> None:
    request = parse_chat_request(body(tools=[TOOL], foo={"bar": 1}, seed=3))
    assert request.wire["foo"] == {"bar": 1}
    assert request.model_extra == {"foo": {"bar": 1}, "seed": 3}
    assert request.tools is not None
    assert request.tools[0].function.name == "get_weather"


@pytest.mark.parametrize(
    ("raw", "param", "fragment"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (b"", None, "not valid JSON"),
        (orjson.dumps({"messages": [USER]}), "model", "Field required"),
        (orjson.dumps({"model": "", "messages": [USER]}), "model", "at least 1"),
        (orjson.dumps({"model": "m"}), "messages", "Field required"),
        (orjson.dumps({"model": "m", "messages": []}), "messages", "at least 1"),
        (body(messages=[{"role": "robot", "content": "x"}]), "messages[0]", "robot"),
        (body(messages=[{"content": "x"}]), "messages[0]", "role"),
        (body(messages=[{"role": "tool", "content": "x"}]), "messages[0].tool_call_id", ""),
        (
            body(messages=[{"role": "user", "content": [{"type": "text"}]}]),
            "messages[0].content[0].text",
            "Field required",
        ),
        (
            body(messages=[{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}]),
            "messages[0].tool_calls[0].function.name",
            "",
        ),
        (body(tools=[{"type": "function"}]), "tools[0].function", "Field required"),
        (body(tools=[{"type": "retrieval"}]), "tools[0].type", ""),
        (
            body(tools=[{"type": "function", "function": {"name": "has space"}}]),
            "tools[0].function.name",
            "pattern",
        ),
        (
            body(tools=[{"type": "function", "function": {"name": "f", "parameters": "x"}}]),
            "tools[0].function.parameters",
            "dictionary",
        ),
        (body(tool_choice="sometimes"), "tool_choice", ""),
        (body(tool_choice="required"), "tool_choice", "no tools"),
        (
            body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "other"}}),
            "tool_choice",
            "'other'",
        ),
        (body(n=0), "n", "greater than or equal to 1"),
        (body(max_tokens=-1), "max_tokens", ""),
        (body(stream="yes"), "stream", ""),
    ],
)
def test_bad_requests_are_400_with_a_param(raw: bytes, param: str | None, fragment: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_chat_request(raw)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("fields", "limit"),
    [({}, None), ({"max_tokens": 5}, 5), ({"max_completion_tokens": 7, "max_tokens": 5}, 7)],
)
def test_output_limit_prefers_max_completion_tokens(fields: dict[str, int], limit: int) -> None:
    assert parse_chat_request(body(**fields)).output_limit == limit


@pytest.mark.parametrize(
    ("fields", "include"),
    [
        ({"stream": True, "stream_options": {"include_usage": True}}, True),
        ({"stream": True}, False),
        ({"stream_options": {"include_usage": True}}, False),
    ],
)
def test_include_usage_only_for_streams(fields: dict[str, Any], include: bool) -> None:
    assert parse_chat_request(body(**fields)).include_usage is include


@pytest.mark.parametrize(
    "fields",
    [
        {"presence_penalty": 0.5, "frequency_penalty": -1, "seed": 7, "logprobs": True},
        {"response_format": {"type": "json_object"}, "metadata": {"a": "b"}, "store": False},
        {"function_call": "auto", "functions": [], "reasoning_effort": "low", "top_k": 40},
        {"presence_penalty": None, "seed": None, "response_format": None},
        {"my_server_option": [1, {"x": True}]},
    ],
)
def test_known_fields_of_the_right_type_null_and_unknown_fields_pass(
    fields: dict[str, Any],
) -> None:
    assert parse_chat_request(body(**fields)).model_extra == fields


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("presence_penalty", [1], "a number"),
        ("presence_penalty", True, "a number"),
        ("top_logprobs", 2.0, "an integer"),
        ("store", 1, "a boolean"),
        ("function_call", 3, "a string or an object"),
        ("modalities", "text", "an array"),
    ],
)
def test_a_known_field_of_the_wrong_type_is_refused_by_name(
    field: str, value: Any, expected: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_chat_request(body(**{field: value}))
    assert caught.value.param == field
    assert caught.value.message == f"Invalid type for '{field}': expected {expected}."


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_an_output_cap_of_zero_is_a_400_naming_it(field: str) -> None:
    """Every upstream that takes a cap refuses 0 (Bedrock: "valid min value: 1"), as OpenAI
    does: it is refused here, before anything is sent (the cloud kinds fuzz found it)."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], field: 0}
    with pytest.raises(InvalidRequest) as caught:
        chat_request_from_wire(body)
    assert caught.value.param == field
