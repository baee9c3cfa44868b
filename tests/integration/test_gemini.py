"""kind: gemini through the whole app: the generateContent request it sends (URL, key header,
a body Gemini's own rules accept, tool results and signatures in a tool loop), and the OpenAI
shapes and errors the client gets back, stream and not."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx

from tests.helpers.gemini_rules import request_problems
from tests.helpers.mock_gemini import (
    GEMINI_TEXT,
    SIGNATURE,
    gemini_answer,
    gemini_error,
    gemini_tool_answer,
    gemini_tool_frames,
    issued_signatures,
)
from tests.helpers.mock_upstream import Frame, Reply
from tests.helpers.openai_stream import assert_openai_stream, fold_stream, parse_sse_body
from tests.helpers.upstream_answers import CALLS, TOOLS
from tests.integration.conftest import (
    GEMINI_KEY,
    USER,
    assert_error,
    chat,
    make_config,
    raw_config,
    sent_json,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

GEMINI_BASE = "http://gemini.upstream.test"
MODELS = f"{GEMINI_BASE}/v1beta/models/gemini-2.5-flash"
GENERATE_URL = f"{MODELS}:generateContent"
STREAM_URL = f"{MODELS}:streamGenerateContent?alt=sse"
EXPECTED_CALLS = [(name, json.loads(arguments)) for _, name, arguments in CALLS]


@pytest.fixture
async def proxy(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": GEMINI_KEY}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as client:
        yield client


def gemini(url: str, upstream: respx.Router, *replies: httpx.Response) -> respx.Route:
    """A route answering in turn with `replies`, after checking each request as Gemini does
    (a 400 like Gemini's when it would refuse it), with the signatures replies hand out."""
    queue = list(replies)
    issued: dict[tuple[str, str], str] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["x-goog-api-key"] == GEMINI_KEY
        assert "key=" not in str(request.url)
        problems = request_problems(json.loads(request.content), issued)
        if problems:
            return httpx.Response(400, json=gemini_error(400, "INVALID_ARGUMENT", str(problems)))
        reply = queue.pop(0)
        if reply.headers.get("content-type") == "application/json":
            issued.update(issued_signatures(Reply(json=json.loads(reply.content))))
        return reply

    return upstream.post(url).mock(side_effect=answer)


def json_reply(gemini_body: Any) -> httpx.Response:
    return httpx.Response(200, json=gemini_body)


def tool_only() -> httpx.Response:
    return json_reply(gemini_tool_answer(text=False))


async def test_request_goes_to_generate_content_with_the_key_in_a_header(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = gemini(GENERATE_URL, upstream, tool_only())

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))

    assert response.status_code == 200, response.text
    assert route.calls.last.request.headers["x-goog-api-key"] == GEMINI_KEY
    declarations = sent_json(route)["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["get_weather", "get_time"]
    assert "additionalProperties" not in json.dumps(declarations)


async def test_non_stream_tool_calls_come_back_in_openai_shape(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    gemini(GENERATE_URL, upstream, json_reply(gemini_tool_answer()))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))

    completion = response.json()
    assert completion["model"] == "gemini"
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == GEMINI_TEXT
    calls = choice["message"]["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == (
        EXPECTED_CALLS
    )
    assert len({c["id"] for c in calls}) == 2
    usage = completion["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (
        82,
        41,
        123,
    )
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 11}


async def test_tool_only_answer_has_null_content(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    gemini(GENERATE_URL, upstream, tool_only())

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))

    assert response.json()["choices"][0]["message"]["content"] is None


async def test_tool_loop_sends_results_in_one_turn_and_the_signature_back(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = gemini(
        GENERATE_URL, upstream, tool_only(), json_reply(gemini_answer([{"text": "Done."}]))
    )

    first = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))
    assistant = first.json()["choices"][0]["message"]
    history = [
        *USER,
        assistant,
        *[
            {"role": "tool", "tool_call_id": call["id"], "content": f"result {position}"}
            for position, call in reversed(list(enumerate(assistant["tool_calls"])))
        ],
    ]
    second = await proxy.post(
        "/v1/chat/completions", json=chat("gemini", messages=history, tools=TOOLS)
    )

    assert second.status_code == 200, second.text
    assert second.json()["choices"][0]["message"]["content"] == "Done."
    contents = sent_json(route)["contents"]
    assert [content["role"] for content in contents] == ["user", "model", "user"]
    assert [part.get("thoughtSignature") for part in contents[1]["parts"]] == [SIGNATURE, None]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"result": "result 0"}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "result 1"}}},
    ]


@pytest.mark.parametrize("include_usage", [True, False])
async def test_stream_meets_the_contract(
    proxy: httpx.AsyncClient, upstream: respx.Router, include_usage: bool
) -> None:
    gemini(STREAM_URL, upstream, sse_response(gemini_tool_frames()))
    body = chat("gemini", tools=TOOLS, stream=True, stream_options={"include_usage": include_usage})

    response = await proxy.post("/v1/chat/completions", json=body)

    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks, done = parse_sse_body(response.content)
    assert_openai_stream(chunks, include_usage=include_usage, done=done)
    assert chunks[0]["model"] == "gemini"


async def test_folded_stream_equals_the_non_stream_answer(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    gemini(STREAM_URL, upstream, sse_response(gemini_tool_frames(), piece_size=7))
    gemini(GENERATE_URL, upstream, json_reply(gemini_tool_answer()))
    stream_body = chat("gemini", tools=TOOLS, stream=True, stream_options={"include_usage": True})

    streamed = await proxy.post("/v1/chat/completions", json=stream_body)
    whole = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))

    folded = fold_stream(parse_sse_body(streamed.content)[0])
    expected = whole.json()
    for answer in (folded, expected):
        del answer["id"], answer["created"]
        for call in answer["choices"][0]["message"]["tool_calls"]:
            # Call ids hold the completion's nonce, which differs between the two answers.
            call["id"] = call["id"].split("_", 2)[1]
    assert folded == expected


async def test_upstream_429_keeps_status_message_and_retry_delay(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "9s"}
    body = gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details=[retry])
    gemini(GENERATE_URL, upstream, httpx.Response(429, json=body))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini"))

    error = assert_error(response, 429)
    assert (error["message"], error["type"]) == ("Quota exceeded.", "rate_limit_error")
    assert response.headers["retry-after"] == "9"


@pytest.mark.parametrize(
    ("status", "grpc_status", "expected"),
    [(400, "INVALID_ARGUMENT", 400), (404, "NOT_FOUND", 404), (500, "INTERNAL", 502)],
)
async def test_upstream_http_errors_map_like_any_upstream(
    proxy: httpx.AsyncClient, upstream: respx.Router, status: int, grpc_status: str, expected: int
) -> None:
    body = gemini_error(status, grpc_status, "Nope from Gemini.")
    gemini(GENERATE_URL, upstream, httpx.Response(status, json=body))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini"))

    error = assert_error(response, expected)
    if expected < 500:
        assert error["message"] == "Nope from Gemini."


async def test_an_invalid_key_is_upstream_auth_failed(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]
    body = gemini_error(400, "INVALID_ARGUMENT", "API key not valid.", details=details)
    gemini(GENERATE_URL, upstream, httpx.Response(400, json=body))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini"))

    error = assert_error(response, 502)  # Gemini refused ToolRelay's key, not the client's
    assert error["code"] == "upstream_auth_failed"
    assert "providers.gm.api_key" in error["message"]


async def test_error_frame_mid_stream_is_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    overloaded = gemini_error(503, "UNAVAILABLE", "The model is overloaded.")
    frames = [*gemini_tool_frames()[:2], Frame(overloaded)]
    gemini(STREAM_URL, upstream, sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", stream=True))

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done
    assert [set(chunk) for chunk in chunks if "error" in chunk] == [{"error"}]
    assert chunks[-1]["error"]["message"] == "The model is overloaded."


async def test_error_as_the_first_frame_is_a_real_status(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = [Frame(gemini_error(429, "RESOURCE_EXHAUSTED", "Slow down."))]
    gemini(STREAM_URL, upstream, sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", stream=True))

    assert assert_error(response, 429)["message"] == "Slow down."


async def test_stream_cut_before_its_finish_ends_with_an_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    gemini(STREAM_URL, upstream, sse_response(gemini_tool_frames()[:4]))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", stream=True))

    chunks, done = parse_sse_body(response.content)
    assert not done
    assert set(chunks[-1]) == {"error"}


async def test_malformed_function_call_is_a_502(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    gemini(GENERATE_URL, upstream, json_reply(gemini_answer([], finish="MALFORMED_FUNCTION_CALL")))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", tools=TOOLS))

    assert assert_error(response, 502)["code"] == "malformed_function_call"


async def test_a_blocked_prompt_is_an_empty_content_filter_answer(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    blocked = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 5},
    }
    gemini(GENERATE_URL, upstream, json_reply(blocked))

    response = await proxy.post("/v1/chat/completions", json=chat("gemini"))

    choice = response.json()["choices"][0]
    assert (choice["finish_reason"], choice["message"]["content"]) == ("content_filter", None)


async def test_a_refused_field_never_reaches_gemini(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = gemini(GENERATE_URL, upstream)

    response = await proxy.post("/v1/chat/completions", json=chat("gemini", logprobs=True))

    assert assert_error(response, 400)["param"] == "logprobs"
    assert not route.called
