"""`response_format` on anthropic upstreams: `output_config.format` by default, an answer tool
with `structured_output: tool` (forced, or offered under thinking or beside the client's own
tools), and that tool's call turned back into content, whole and streamed."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.anthropic import TRANSLATOR
from app.translators.anthropic.structured import JSON_TOOL, JSON_TOOL_DESCRIPTION
from app.translators.base import ResponseContext, Target
from tests.helpers.anthropic_requests import TARGET, TOOLS, refusal, send
from tests.helpers.openai_stream import assert_openai_stream, fold_stream

TOOL_TARGET = dataclasses.replace(TARGET, structured_output="tool")
SCHEMA = {
    "type": "object",
    "properties": {"city": {"$ref": "#/$defs/City"}},
    "required": ["city"],
    "additionalProperties": False,
    "$defs": {"City": {"type": "string"}},
}
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "W", "schema": SCHEMA, "strict": True},
}
HELLO = {"role": "user", "content": "hi"}


def upstream(target: Target = TARGET, **fields: Any) -> dict[str, Any]:
    upstream_body: dict[str, Any] = orjson.loads(send(target, **fields).body)
    return upstream_body


# --- requests -----------------------------------------------------------------------------------


def test_json_schema_goes_as_output_config_with_the_schema_as_given() -> None:
    sent = upstream(response_format=JSON_SCHEMA)
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "tools" not in sent
    assert "tool_choice" not in sent


def test_json_object_is_the_schema_of_any_object_and_text_is_nothing() -> None:
    sent = upstream(response_format={"type": "json_object"})
    assert sent["output_config"] == {
        "format": {"type": "json_schema", "schema": {"type": "object"}}
    }
    assert "output_config" not in upstream(response_format={"type": "text"})


def test_native_json_keeps_the_clients_tools_and_thinking() -> None:
    sent = upstream(response_format=JSON_SCHEMA, tools=TOOLS, reasoning_effort="low")
    assert [tool["name"] for tool in sent["tools"]] == ["f"]
    assert sent["thinking"]["type"] == "enabled"
    assert "format" in sent["output_config"]


def test_tool_mode_forces_the_answer_tool() -> None:
    sent = upstream(TOOL_TARGET, response_format=JSON_SCHEMA)
    assert sent["tools"] == [
        {"name": JSON_TOOL, "description": JSON_TOOL_DESCRIPTION, "input_schema": SCHEMA}
    ]
    assert sent["tool_choice"] == {"type": "tool", "name": JSON_TOOL}
    assert "output_config" not in sent


def test_tool_mode_json_object_and_the_schemas_description() -> None:
    sent = upstream(TOOL_TARGET, response_format={"type": "json_object"})
    assert sent["tools"][0]["input_schema"] == {"type": "object"}
    described = {"type": "json_schema", "json_schema": {"name": "W", "description": "A town"}}
    assert upstream(TOOL_TARGET, response_format=described)["tools"][0]["description"] == "A town"


def test_tool_mode_with_thinking_offers_the_tool_without_forcing_it() -> None:
    sent = upstream(TOOL_TARGET, response_format=JSON_SCHEMA, reasoning_effort="low")
    assert sent["thinking"]["type"] == "enabled"
    assert sent["tools"][0]["name"] == JSON_TOOL
    assert "tool_choice" not in sent


def test_tool_mode_beside_the_clients_tools_keeps_their_choice_and_a_free_name() -> None:
    own = [*TOOLS, {"type": "function", "function": {"name": JSON_TOOL}}]
    sent = upstream(TOOL_TARGET, response_format=JSON_SCHEMA, tools=own, tool_choice="required")
    assert [tool["name"] for tool in sent["tools"]] == ["f", JSON_TOOL, f"{JSON_TOOL}_2"]
    assert sent["tool_choice"] == {"type": "any"}


def test_tool_mode_keeps_parallel_tool_calls_false() -> None:
    sent = upstream(TOOL_TARGET, response_format=JSON_SCHEMA, parallel_tool_calls=False)
    assert sent["tool_choice"]["disable_parallel_tool_use"] is True


@pytest.mark.parametrize(
    ("response_format", "param"),
    [
        ({"type": "xml"}, "response_format"),
        ("json", "response_format"),
        ({"type": "json_schema"}, "response_format.json_schema"),
        (
            {"type": "json_schema", "json_schema": {"schema": []}},
            "response_format.json_schema.schema",
        ),
    ],
)
def test_a_malformed_response_format_is_refused_by_name(response_format: Any, param: str) -> None:
    assert refusal(response_format=response_format).param == param


def test_tool_mode_refuses_a_schema_whose_root_is_not_an_object() -> None:
    listed = {"type": "json_schema", "json_schema": {"name": "L", "schema": {"type": "array"}}}
    with pytest.raises(InvalidRequest, match="must describe an object") as caught:
        send(TOOL_TARGET, response_format=listed)
    assert caught.value.param == "response_format.json_schema.schema"


# --- answers ------------------------------------------------------------------------------------


def context(target: Target, **fields: Any) -> ResponseContext:
    wire = {"model": "claude", "messages": [HELLO], "response_format": JSON_SCHEMA, **fields}
    request = parse_chat_request(orjson.dumps(wire))
    return ResponseContext("chatcmpl-test", 1700000000, "claude", request, target=target)


def tool_use(name: str, tool_input: dict[str, Any], block_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": block_id, "name": name, "input": tool_input}


def message(*blocks: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": list(blocks),
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 7},
        }
    )


def test_the_answer_tools_input_is_the_content_and_the_finish_is_stop() -> None:
    body = message({"type": "text", "text": "Here:"}, tool_use(JSON_TOOL, {"city": "Oslo"}))
    answer = TRANSLATOR.parse_response(body, context(TOOL_TARGET))
    choice = answer["choices"][0]
    assert choice["message"]["content"] == '{"city":"Oslo"}'
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"


def test_calls_to_the_clients_tools_stay_calls_beside_the_answer() -> None:
    body = message(tool_use("f", {}, "toolu_0"), tool_use(JSON_TOOL, {"city": "Oslo"}))
    choice = TRANSLATOR.parse_response(body, context(TOOL_TARGET, tools=TOOLS))["choices"][0]
    assert choice["message"]["content"] == '{"city":"Oslo"}'
    assert [call["function"]["name"] for call in choice["message"]["tool_calls"]] == ["f"]
    assert choice["finish_reason"] == "tool_calls"


def test_without_tool_mode_a_tool_of_that_name_is_an_ordinary_call() -> None:
    body = message(tool_use(JSON_TOOL, {"city": "Oslo"}))
    choice = TRANSLATOR.parse_response(body, context(TARGET))["choices"][0]
    assert choice["message"]["tool_calls"][0]["function"]["name"] == JSON_TOOL
    assert choice["finish_reason"] == "tool_calls"


def events(*blocks: list[dict[str, Any]]) -> list[SSEEvent]:
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 5}}}
    stop = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    flat: list[dict[str, Any]] = [start, *(e for block in blocks for e in block), *stop]
    return [SSEEvent(event=e["type"], data=orjson.dumps(e).decode()) for e in flat]


def text_block(index: int, text: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "text_delta", "text": text},
        },
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, name: str, fragments: list[str]) -> list[dict[str, Any]]:
    start = {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": {}}
    deltas = [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": f},
        }
        for f in fragments
    ]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *deltas,
        {"type": "content_block_stop", "index": index},
    ]


def client_view(ctx: ResponseContext, sse: list[SSEEvent]) -> list[dict[str, Any]]:
    stream = TRANSLATOR.stream(ctx)
    chunks = [chunk for event in sse for chunk in stream.feed(event)]
    return chunks + stream.finish()


def test_streamed_input_json_deltas_become_content_deltas_and_text_is_dropped() -> None:
    sse = events(text_block(0, "Here:"), tool_block(1, JSON_TOOL, ['{"city"', ': "Oslo"}']))
    view = client_view(context(TOOL_TARGET), sse)
    assert_openai_stream(view, include_usage=False)
    contents = [c["choices"][0]["delta"].get("content") for c in view[1:-1]]
    assert contents == ['{"city"', ': "Oslo"}']
    folded = fold_stream(view)
    assert folded["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in folded["choices"][0]["message"]


def test_streamed_client_calls_close_the_answer_tools_index() -> None:
    blocks = (tool_block(0, JSON_TOOL, ['{"city": "Oslo"}']), tool_block(1, "f", ["{}"]))
    view = client_view(context(TOOL_TARGET, tools=TOOLS), events(*blocks))
    folded = fold_stream(view)
    message_out = folded["choices"][0]["message"]
    assert message_out["content"] == '{"city": "Oslo"}'
    assert [call["function"]["name"] for call in message_out["tool_calls"]] == ["f"]
    assert folded["choices"][0]["finish_reason"] == "tool_calls"


def test_streamed_text_without_the_answer_tool_is_sent_before_the_finish() -> None:
    view = client_view(context(TOOL_TARGET), events(text_block(0, "No JSON today.")))
    assert view[-2]["choices"][0]["delta"] == {"content": "No JSON today."}
    assert fold_stream(view)["choices"][0]["message"]["content"] == "No JSON today."
