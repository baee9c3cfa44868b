"""Deviant OpenAI-compatible upstreams through the whole app, read by the OpenAI SDK's stream
helper: the transcripts' upstream chunks, which that helper cannot read as sent (a missing
index raises; repeated ids and names are concatenated), reach it as a strict stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
import respx

from tests.helpers.mock_upstream import Frame
from tests.helpers.upstream_answers import TOOLS
from tests.integration.conftest import (
    CLIENT_KEY,
    OPENAI_URL,
    USER,
    make_config,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "openai_compat"


def upstream_of(name: str) -> Any:
    return orjson.loads((TRANSCRIPTS / f"{name}.json").read_bytes())["upstream"]


@pytest.fixture
async def sdk(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[openai.AsyncOpenAI]:
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(), transport=transport) as proxy:
        yield openai.AsyncOpenAI(
            api_key=CLIENT_KEY,
            base_url="http://toolrelay.test/v1",
            http_client=proxy,
            max_retries=0,
        )


async def final_completion(sdk: openai.AsyncOpenAI) -> Any:
    tools: Any = TOOLS
    async with sdk.chat.completions.stream(model="mini", messages=USER, tools=tools) as stream:
        async for _event in stream:
            pass
        return await stream.get_final_completion()


@pytest.mark.parametrize(
    ("transcript", "calls"),
    [
        (
            "ollama_whole_call_without_index",
            [
                ("call_rcja46yu", "get_weather", '{"city":"Paris"}'),
                ("call_u0wb8kxa", "get_time", '{"timezone":"Asia/Tokyo"}'),
            ],
        ),
        ("gemini_compat_no_index", [("call_297140", "get_weather", '{"city":"Paris"}')]),
        (
            "oci_repeated_id_and_name",
            [("chatcmpl-tool-a91e77be296474b3", "get_weather", '{"city": "Paris"}')],
        ),
    ],
)
async def test_the_sdk_stream_helper_reads_a_repaired_stream(
    sdk: openai.AsyncOpenAI,
    upstream: respx.Router,
    transcript: str,
    calls: list[tuple[str, str, str]],
) -> None:
    frames = [Frame(entry) for entry in upstream_of(transcript)]
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    completion = await final_completion(sdk)

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    tool_calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in tool_calls] == calls
    assert completion.model == "mini"


async def test_object_arguments_reach_the_sdk_as_json_text(
    sdk: openai.AsyncOpenAI, upstream: respx.Router
) -> None:
    upstream.post(OPENAI_URL).respond(json=upstream_of("llamacpp_object_arguments_answer"))

    completion = await sdk.chat.completions.create(model="mini", messages=USER, tools=TOOLS)

    (call,) = completion.choices[0].message.tool_calls or []
    assert call.function.arguments == '{"city":"Paris","unit":"celsius"}'


async def test_gemini_thought_signature_reaches_the_sdk_with_its_call(
    sdk: openai.AsyncOpenAI, upstream: respx.Router
) -> None:
    """Gemini 3 refuses the next turn unless each call comes back with its signature."""
    frames = [Frame(entry) for entry in upstream_of("gemini_compat_no_index")]
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    completion = await final_completion(sdk)

    (call,) = completion.choices[0].message.tool_calls or []
    assert call.to_dict()["extra_content"]["google"]["thought_signature"].startswith("CiQB")
