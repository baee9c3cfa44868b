"""kind: openai forwards the client's request with only `model` rewritten, and relays answers:
non-stream as sent, streams chunk for chunk."""

from __future__ import annotations

import httpx
import pytest
import respx

from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body
from tests.helpers.upstream_answers import (
    TOOLS,
    openai_text_chunks,
    openai_tool_chunks,
    openai_tool_completion,
)
from tests.integration.conftest import (
    CLIENT_KEY,
    OPENAI_URL,
    PROVIDER_KEY,
    USER,
    chat,
    make_config,
    raw_config,
    sent_json,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

CLIENT_BODY = {
    "model": "mini",
    "messages": [
        {"role": "system", "content": "Be brief."},
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
    ],
    "tools": TOOLS,
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "temperature": 0.3,
    "seed": 7,
    "logit_bias": {"1234": -100},
    "x_vendor_extension": {"nested": [1, {"deep": None}]},
    "reasoning_effort": "low",
}


async def test_request_is_forwarded_with_only_model_rewritten(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    await proxy.post("/v1/chat/completions", json=CLIENT_BODY)

    assert sent_json(route) == CLIENT_BODY | {"model": "gpt-4o-mini"}


async def test_upstream_gets_the_provider_key_as_bearer(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    await proxy.post("/v1/chat/completions", json=chat())

    assert route.calls.last.request.headers["authorization"] == f"Bearer {PROVIDER_KEY}"


async def test_client_key_is_not_forwarded_upstream(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    await proxy.post("/v1/chat/completions", json=chat())

    request = route.calls.last.request
    assert CLIENT_KEY not in "".join(f"{k}{v}" for k, v in request.headers.multi_items())
    assert CLIENT_KEY.encode() not in request.content


async def test_provider_without_key_sends_no_authorization(
    upstream: respx.Router, anyio_backend: str
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    raw = raw_config()
    del raw["providers"]["oa"]["api_key"]  # a local server (vLLM, Ollama) that needs none
    async with serve(make_config(raw), transport=httpx.MockTransport(upstream.async_handler)) as c:
        response = await c.post("/v1/chat/completions", json=chat())

    assert response.status_code == 200
    assert "authorization" not in route.calls.last.request.headers


async def test_non_stream_tool_calls_are_relayed_intact(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    response = await proxy.post("/v1/chat/completions", json=chat(tools=TOOLS))

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == openai_tool_completion() | {"model": "mini"}


@pytest.mark.parametrize(
    "chunks",
    [openai_tool_chunks(include_usage=True), openai_text_chunks("Hel", "lo", " there")],
    ids=["tool-calls", "text"],
)
async def test_stream_chunks_are_relayed_as_they_came(
    proxy: httpx.AsyncClient, upstream: respx.Router, chunks: list[dict[str, object]]
) -> None:
    upstream.post(OPENAI_URL).mock(return_value=sse_response(openai_frames(chunks)))
    body = chat(stream=True, tools=TOOLS, stream_options={"include_usage": True})

    response = await proxy.post("/v1/chat/completions", json=body)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    client_chunks, done = parse_sse_body(response.content)
    assert done
    assert client_chunks == [chunk | {"model": "mini"} for chunk in chunks]


@pytest.mark.parametrize("piece_size", [1, 5, 97])
async def test_stream_relay_does_not_depend_on_how_upstream_bytes_are_cut(
    proxy: httpx.AsyncClient, upstream: respx.Router, piece_size: int
) -> None:
    chunks = openai_tool_chunks()
    frames = openai_frames(chunks)
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames, piece_size=piece_size))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    client_chunks, done = parse_sse_body(response.content)
    assert done
    assert client_chunks == [chunk | {"model": "mini"} for chunk in chunks]


async def test_stream_of_parallel_calls_meets_the_contract(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_tool_chunks(include_usage=True))
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))
    body = chat(stream=True, tools=TOOLS, stream_options={"include_usage": True})

    response = await proxy.post("/v1/chat/completions", json=body)

    client_chunks, done = parse_sse_body(response.content)
    assert_openai_stream(client_chunks, include_usage=True, done=done)


async def test_folded_stream_equals_the_non_stream_answer(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_tool_chunks(include_usage=True))
    upstream.post(OPENAI_URL).mock(
        side_effect=[sse_response(frames), httpx.Response(200, json=openai_tool_completion())]
    )
    stream_body = chat(stream=True, tools=TOOLS, stream_options={"include_usage": True})

    streamed = await proxy.post("/v1/chat/completions", json=stream_body)
    whole = await proxy.post("/v1/chat/completions", json=chat(tools=TOOLS))

    folded = fold_stream(parse_sse_body(streamed.content)[0])
    expected = whole.json()
    expected.pop("system_fingerprint")
    assert folded == expected


async def test_stream_without_done_after_finish_still_ends_with_done(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_text_chunks("Hi"), done=False)
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True))

    client_chunks, done = parse_sse_body(response.content)
    assert done
    assert_openai_stream(client_chunks, include_usage=False)


async def test_stream_response_names_the_model(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream.post(OPENAI_URL).mock(return_value=sse_response(openai_frames(openai_text_chunks())))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True))

    assert response.headers["x-toolrelay-model"] == "mini"


async def test_stream_over_real_http_is_relayed_as_it_came(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    chunks = openai_tool_chunks(include_usage=True)
    mock_upstream.add(Reply(frames=openai_frames(chunks)))
    config = make_config(raw_config(openai_base=f"{mock_upstream.base_url}/v1"))
    body = chat(stream=True, tools=TOOLS, stream_options={"include_usage": True})
    async with serve(config) as client:  # the production transport (httpx-aiohttp)
        response = await client.post("/v1/chat/completions", json=body)

    (exchange,) = mock_upstream.requests(OPENAI_PATH)
    assert exchange.body == body | {"model": "gpt-4o-mini"}
    assert exchange.headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    client_chunks, done = parse_sse_body(response.content)
    assert done
    assert client_chunks == [chunk | {"model": "mini"} for chunk in chunks]
