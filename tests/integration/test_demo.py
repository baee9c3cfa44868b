"""kind: demo, the built-in offline model: it calls the first (or the tool_choice-named) tool
with arguments valid against the tool's schema, streamed in several fragments; it answers
`response_format` with JSON valid against the schema, which the openai SDK's `parse` helpers
turn into the pydantic object, on the chat and the Responses face."""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

import httpx
import jsonschema
import openai
import pytest
import respx
from pydantic import BaseModel, Field

from app.translators import TRANSLATORS
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body
from tests.helpers.upstream_answers import TIME_TOOL, TOOLS, WEATHER_TOOL
from tests.integration.conftest import CLIENT_KEY, chat

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


# --- structured output and forced tool loops (issue 20, part 3) ---------------------------------


class Stop(BaseModel):
    name: str = Field(min_length=2)
    minutes: int = Field(ge=15, le=240)


class Itinerary(BaseModel):
    """What a framework asks for: nested models, an Optional field, an enum-like Literal, a
    list with a minimum length."""

    city: str
    pace: Literal["slow", "fast"]
    stops: list[Stop] = Field(min_length=2)
    note: Optional[str] = None  # noqa: UP045 - the Optional spelling frameworks use


ITINERARY_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "Itinerary", "schema": Itinerary.model_json_schema()},
}


@pytest.fixture
def sdk(proxy: httpx.AsyncClient) -> openai.AsyncOpenAI:
    """The openai SDK speaking to the in-process proxy."""
    return openai.AsyncOpenAI(
        api_key=CLIENT_KEY, base_url="http://toolrelay.test/v1", http_client=proxy, max_retries=0
    )


async def test_json_schema_answer_validates_and_streams_the_same(
    proxy: httpx.AsyncClient,
) -> None:
    chunks = await _stream(proxy, response_format=ITINERARY_FORMAT)
    response = await proxy.post(
        "/v1/chat/completions", json=chat("demo", response_format=ITINERARY_FORMAT)
    )

    content = response.json()["choices"][0]["message"]["content"]
    jsonschema.validate(json.loads(content), Itinerary.model_json_schema())
    assert fold_stream(chunks)["choices"][0]["message"]["content"] == content
    assert sum(1 for chunk in chunks if chunk["choices"][0]["delta"].get("content")) >= 2


async def test_json_object_answer_is_an_object(proxy: httpx.AsyncClient) -> None:
    body = chat("demo", response_format={"type": "json_object"})
    response = await proxy.post("/v1/chat/completions", json=body)

    assert isinstance(json.loads(response.json()["choices"][0]["message"]["content"]), dict)


async def test_required_after_results_calls_the_next_tool_then_the_last(
    proxy: httpx.AsyncClient,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    names = []
    for _ in range(3):
        body = {"model": "demo", "messages": messages, "tools": TOOLS, "tool_choice": "required"}
        response = await proxy.post("/v1/chat/completions", json=body)
        answer = response.json()["choices"][0]["message"]
        (call,) = answer["tool_calls"]
        names.append(call["function"]["name"])
        messages += [answer, {"role": "tool", "tool_call_id": call["id"], "content": "ok"}]

    assert names == ["get_weather", "get_time", "get_time"]


async def test_sdk_chat_parse_returns_the_pydantic_object(sdk: openai.AsyncOpenAI) -> None:
    completion = await sdk.chat.completions.parse(
        model="demo",
        messages=[{"role": "user", "content": "A day in Lisbon"}],
        response_format=Itinerary,
    )

    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Itinerary)
    assert len(parsed.stops) >= 2


async def test_sdk_chat_stream_parse_equals_the_non_stream_parse(sdk: openai.AsyncOpenAI) -> None:
    messages: Any = [{"role": "user", "content": "A day in Lisbon"}]
    whole = await sdk.chat.completions.parse(
        model="demo", messages=messages, response_format=Itinerary
    )
    async with sdk.chat.completions.stream(
        model="demo", messages=messages, response_format=Itinerary
    ) as stream:
        async for _event in stream:
            pass
        streamed = await stream.get_final_completion()

    assert streamed.choices[0].message.parsed == whole.choices[0].message.parsed


async def test_sdk_responses_parse_returns_the_pydantic_object(sdk: openai.AsyncOpenAI) -> None:
    response = await sdk.responses.parse(
        model="demo", input="A day in Lisbon", text_format=Itinerary
    )

    assert isinstance(response.output_parsed, Itinerary)
