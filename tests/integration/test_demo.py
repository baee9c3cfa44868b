"""kind: demo, the built-in offline model: it calls the first (or the tool_choice-named) tool
with arguments valid against the tool's schema, streamed in several fragments."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema
import pytest
import respx

from app.translators import TRANSLATORS
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body
from tests.helpers.upstream_answers import TIME_TOOL, TOOLS, WEATHER_TOOL
from tests.integration.conftest import chat

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif("demo" not in TRANSLATORS, reason="kind demo not registered yet"),
]

BOOKING_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "book_table",
        "parameters": {
            "type": "object",
            "properties": {
                "restaurant": {"type": "string", "minLength": 3},
                "party": {"type": "integer", "minimum": 1, "maximum": 12},
                "when": {"type": "string", "format": "date-time"},
                "tags": {"type": "array", "items": {"enum": ["quiet", "window"]}, "minItems": 1},
                "contact": {
                    "type": "object",
                    "properties": {"email": {"type": "string", "format": "email"}},
                    "required": ["email"],
                    "additionalProperties": False,
                },
            },
            "required": ["restaurant", "party", "when", "tags", "contact"],
            "additionalProperties": False,
        },
    },
}


def _named(tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool["function"]["name"]}}


async def _stream(proxy: httpx.AsyncClient, **fields: Any) -> list[dict[str, Any]]:
    body = chat("demo", stream=True, **fields)
    response = await proxy.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    chunks, done = parse_sse_body(response.content)
    include_usage = bool(fields.get("stream_options", {}).get("include_usage"))
    assert_openai_stream(chunks, include_usage=include_usage, done=done)
    return chunks


def _calls(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(fold_stream(chunks)["choices"][0]["message"].get("tool_calls") or [])


@pytest.mark.parametrize(
    ("tools", "tool_choice", "called"),
    [
        (TOOLS, None, WEATHER_TOOL),
        (TOOLS, "required", WEATHER_TOOL),
        (TOOLS, _named(TIME_TOOL), TIME_TOOL),
        ([WEATHER_TOOL, BOOKING_TOOL], _named(BOOKING_TOOL), BOOKING_TOOL),
    ],
    ids=["first", "required", "named", "nested-schema"],
)
async def test_stream_calls_the_expected_tool_with_schema_valid_arguments(
    proxy: httpx.AsyncClient,
    tools: list[dict[str, Any]],
    tool_choice: Any,
    called: dict[str, Any],
) -> None:
    fields: dict[str, Any] = {"tools": tools}
    if tool_choice is not None:
        fields["tool_choice"] = tool_choice

    chunks = await _stream(proxy, **fields)

    (call,) = _calls(chunks)
    assert call["function"]["name"] == called["function"]["name"]
    arguments = json.loads(call["function"]["arguments"])
    jsonschema.validate(
        arguments,
        called["function"]["parameters"],
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


async def test_arguments_stream_in_several_fragments(proxy: httpx.AsyncClient) -> None:
    chunks = await _stream(proxy, tools=[BOOKING_TOOL])

    fragments = [
        delta_call["function"]["arguments"]
        for chunk in chunks
        for delta_call in chunk["choices"][0]["delta"].get("tool_calls") or []
        if delta_call["function"].get("arguments")
    ]
    assert len(fragments) >= 2


async def test_stream_with_usage_meets_the_contract(proxy: httpx.AsyncClient) -> None:
    chunks = await _stream(proxy, tools=TOOLS, stream_options={"include_usage": True})

    assert chunks[-1]["usage"]["total_tokens"] > 0


async def test_folded_stream_equals_the_non_stream_answer(proxy: httpx.AsyncClient) -> None:
    chunks = await _stream(proxy, tools=TOOLS, stream_options={"include_usage": True})
    response = await proxy.post("/v1/chat/completions", json=chat("demo", tools=TOOLS))

    folded = fold_stream(chunks)
    whole = response.json()
    for answer in (folded, whole):
        del answer["id"], answer["created"]
    assert folded == whole


async def test_demo_never_touches_the_network(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    response = await proxy.post("/v1/chat/completions", json=chat("demo", tools=TOOLS))

    assert response.status_code == 200
    assert response.headers["x-toolrelay-model"] == "demo"
    assert not upstream.calls
