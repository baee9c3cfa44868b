"""app.json_depth: the edge's one depth limit, where it names the place, the translators'
backstop for JSON text the edge's byte count cannot see, and a property: any nesting, anywhere,
through either client API to any kind, is refused at the edge or serialises upstream."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.faces.messages.request import chat_request
from app.json_depth import MAX_JSON_DEPTH, value_too_deep
from app.openai_types import decode_request_body, parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import Target
from app.translators.gemini.messages import _response_object

ORJSON_MAX_DEPTH = 254
TARGETS = {
    "openai": Target("mini", "oa", ProviderConfig(kind="openai", api_key="k"), "gpt-4o-mini"),
    "anthropic": Target(
        "claude", "an", ProviderConfig(kind="anthropic", api_key="k"), "claude-sonnet-4-5"
    ),
    "gemini": Target(
        "gemini", "gm", ProviderConfig(kind="gemini", api_key="k"), "gemini-2.5-flash"
    ),
}


def nested(levels: int, key: str = "a") -> str:
    return f'{{"{key}":' * (levels - 1) + "{}" + "}" * (levels - 1)


def nested_list(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_the_limit_leaves_room_under_what_orjson_serialises() -> None:
    at = orjson.loads(nested_list(ORJSON_MAX_DEPTH))
    orjson.dumps(at)
    with pytest.raises(TypeError):
        orjson.dumps([at])
    assert 2 * MAX_JSON_DEPTH <= ORJSON_MAX_DEPTH + 2


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH])
def test_a_body_at_the_limit_is_decoded(levels: int) -> None:
    body = f'{{"x":{nested_list(levels - 1)}}}'.encode()
    assert decode_request_body(body)["x"] is not None


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 300, 1100])
def test_arrays_name_their_indexes_in_either_style(levels: int) -> None:
    body = f'{{"x":[1,{nested_list(levels - 1)}]}}'.encode()
    with pytest.raises(InvalidRequest) as dotted:
        decode_request_body(body)
    with pytest.raises(InvalidRequest) as openai:
        decode_request_body(body, param_style="openai")
    assert dotted.value.param == "x.1" + ".0" * (MAX_JSON_DEPTH - 2)
    assert openai.value.param == "x[1]" + "[0]" * (MAX_JSON_DEPTH - 2)


def test_strings_with_brackets_do_not_mislead_the_path_of_an_unparsable_body() -> None:
    body = f'{{"s":"}}]{{[\\"","k\\"ey":{{"b":[{{}}]}},"y":{nested(1100)}}}'.encode()
    with pytest.raises(InvalidRequest) as refused:
        decode_request_body(body, param_style="openai")
    assert refused.value.param == "y" + ".a" * (MAX_JSON_DEPTH - 1)


def test_a_wide_body_with_many_brackets_is_walked_and_accepted() -> None:
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "parameters": orjson.loads(nested(60))}}
        for i in range(50)
    ]
    body = orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}
    )
    assert len(parse_chat_request(body).tools or ()) == 50


def _call_body(arguments: str) -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    messages = [
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "user", "content": "y"},
    ]
    return orjson.dumps({"model": "m", "messages": messages})


def test_arguments_count_where_they_stand() -> None:
    # The function object is level 6, so its arguments' JSON may take 122 levels.
    parse_chat_request(_call_body(nested(MAX_JSON_DEPTH - 6)))
    with pytest.raises(InvalidRequest) as refused:
        parse_chat_request(_call_body(nested(MAX_JSON_DEPTH - 5)))
    assert refused.value.param == "messages[0].tool_calls[0].function.arguments"


def test_escaped_brackets_in_arguments_are_refused_by_the_kinds_that_parse_them() -> None:
    escaped = orjson.dumps(nested(300)).replace(b"{", b"\\u007b")  # a JSON string
    body = _call_body("@").replace(b'"@"', escaped)
    request = parse_chat_request(body)  # few literal brackets: the edge does not walk it
    TRANSLATORS["openai"].build_request(request, TARGETS["openai"])  # a string to openai
    for kind in ("anthropic", "gemini"):
        with pytest.raises(InvalidRequest) as refused:
            TRANSLATORS[kind].build_request(request, TARGETS[kind])
        assert refused.value.param == "messages[0].tool_calls[0].function.arguments"


def test_gemini_sends_a_too_deep_tool_result_as_text() -> None:
    text = nested(300)
    assert _response_object(text) == {"result": text}
    assert _response_object(nested(5)) == orjson.loads(nested(5))


def test_value_too_deep() -> None:
    assert not value_too_deep(orjson.loads(nested(MAX_JSON_DEPTH)))
    assert value_too_deep(orjson.loads(nested(MAX_JSON_DEPTH + 1)))
    assert not value_too_deep("x" * 10)


# --- property: any nesting, anywhere, any API, any kind ---------------------------------------

_TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def _chat_body(spot: str, deep: str) -> bytes:
    placeholder = '"@DEEP@"'
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "@ARGS@"}}
    wire: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "user", "content": [{"type": "text", "text": "y", "x": "@DEEP@"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": "@DEEP@"}}],
    }
    if spot == "unknown":
        wire["x_deep"] = "@DEEP@"
    raw = orjson.dumps(wire)
    arguments = orjson.dumps(deep) if spot == "arguments" else b'"{}"'
    raw = raw.replace(b'"@ARGS@"', arguments)
    holes = {"content": 0, "parameters": 1, "unknown": 2}
    for index in range(3):
        raw = raw.replace(
            placeholder.encode(), deep.encode() if index == holes.get(spot) else b"{}", 1
        )
    return raw


def _messages_body(spot: str, deep: str) -> bytes:
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": "@INPUT@"}
    wire = {
        "model": "m",
        "max_tokens": 8,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        ],
        "tools": [{"name": "f", "input_schema": "@SCHEMA@"}],
        "metadata": "@META@",
    }
    raw = orjson.dumps(wire)
    for name, hole in (("input", "INPUT"), ("schema", "SCHEMA"), ("metadata", "META")):
        raw = raw.replace(f'"@{hole}@"'.encode(), deep.encode() if spot == name else b"{}")
    return raw


def _deep_text(levels: int, shape: list[bool]) -> str:
    """`levels` deep, an object at the top (what arguments and schemas must be), then objects
    or arrays level by level as `shape` says (cycled)."""
    opens, closes = [], []
    for level in range(levels - 1):
        is_object = level == 0 or shape[level % len(shape)]
        opens.append('{"a":' if is_object else "[0,")
        closes.append("}" if is_object else "]")
    return "".join(opens) + "{}" + "".join(reversed(closes))


def _sent(request_body: bytes, kind: str, face: str) -> None:
    """Through the face's edge and the kind's builder: a 400, or a body that serialised."""
    if face == "chat":
        request = parse_chat_request(request_body)
    else:
        request = chat_request(decode_request_body(request_body))
    TRANSLATORS[kind].build_request(request, TARGETS[kind])


_DEPTHS = st.one_of(
    st.integers(MAX_JSON_DEPTH - 8, MAX_JSON_DEPTH + 8), st.sampled_from([300, 600, 900, 1100])
)


@given(
    face_spot=st.sampled_from(
        [("chat", s) for s in ("arguments", "content", "parameters", "unknown")]
        + [("messages", s) for s in ("input", "schema", "metadata")]
    ),
    kind=st.sampled_from(sorted(TARGETS)),
    depth=_DEPTHS,
    shape=st.lists(st.booleans(), min_size=1, max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_deep_nesting_is_a_named_400_or_reaches_any_kind(
    face_spot: tuple[str, str], kind: str, depth: int, shape: list[bool]
) -> None:
    face, spot = face_spot
    prefix = {"arguments": 6, "content": 5, "parameters": 4, "unknown": 1}
    prefix |= {"input": 5, "schema": 3, "metadata": 1}
    levels = depth - prefix[spot]
    deep = _deep_text(levels, shape)
    body = _chat_body(spot, deep) if face == "chat" else _messages_body(spot, deep)
    refusal: InvalidRequest | None = None
    try:
        _sent(body, kind, face)
    except InvalidRequest as refused:
        refusal = refused
    if refusal is None:
        assert depth <= MAX_JSON_DEPTH
    elif "nested too deeply" in refusal.message:
        assert depth > MAX_JSON_DEPTH, refusal.message
        assert refusal.param
    else:  # a kind's own named refusal (an unknown field), whatever the depth
        assert depth <= MAX_JSON_DEPTH, refusal.message
        assert (spot, face) == ("unknown", "chat")
        assert kind != "openai"
