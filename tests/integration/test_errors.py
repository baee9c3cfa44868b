"""CONTRACT.md's error table, row by row, plus unknown routes and failures inside the proxy."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest
import respx

from tests.helpers.mock_upstream import OPENAI_PATH, Frame, MockUpstream, Reply, openai_frames
from tests.helpers.openai_stream import parse_sse_body
from tests.helpers.upstream_answers import TOOLS, openai_text_chunks, openai_tool_chunks
from tests.integration.conftest import (
    OPENAI_URL,
    USER,
    assert_error,
    chat,
    make_config,
    raw_config,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

STREAM_MODES = pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])

_FN = {"type": "function", "function": {"name": "f"}}
_CHOOSE_G = {"type": "function", "function": {"name": "g"}}
# id: (request body: raw bytes or a JSON value, the `param` the 400 must name)
BAD_REQUESTS: dict[str, tuple[Any, str | None]] = {
    "not-json": (b'{"model": "mini", "messages": [', None),
    "empty-body": (b"", None),
    "json-array": ([{"model": "mini"}], None),
    "json-string": ("mini", None),
    "no-model": ({"messages": USER}, "model"),
    "empty-model": ({"model": "", "messages": USER}, "model"),
    "model-not-string": ({"model": 4, "messages": USER}, "model"),
    "no-messages": ({"model": "mini"}, "messages"),
    "empty-messages": ({"model": "mini", "messages": []}, "messages"),
    "tool-bad-name": (
        chat(tools=[{"type": "function", "function": {"name": "no spaces!"}}]),
        "tools[0].function.name",
    ),
    "tool-no-function": (chat(tools=[{"type": "function"}]), "tools[0].function"),
    "tool-bad-type": (chat(tools=[_FN, {**_CHOOSE_G, "type": "magic"}]), "tools[1].type"),
    "tool-parameters-not-object": (
        chat(tools=[{"type": "function", "function": {"name": "f", "parameters": 3}}]),
        "tools[0].function.parameters",
    ),
    "tool-choice-unknown-function": (chat(tools=[_FN], tool_choice=_CHOOSE_G), "tool_choice"),
    "tool-message-without-id": (
        {"model": "mini", "messages": [*USER, {"role": "tool", "content": "x"}]},
        "messages[1].tool_call_id",
    ),
}
BAD_ROLES = ["wizard", "", None]


@pytest.mark.parametrize(("body", "param"), BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
async def test_invalid_request_is_400(
    proxy: httpx.AsyncClient, upstream: respx.Router, body: Any, param: str | None
) -> None:
    route = upstream.post(OPENAI_URL).respond(json={})
    content = body if isinstance(body, bytes) else json.dumps(body).encode()

    response = await proxy.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )

    error = assert_error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert not route.called


@pytest.mark.parametrize("role", BAD_ROLES)
async def test_bad_role_is_400_naming_the_message(
    proxy: httpx.AsyncClient, upstream: respx.Router, role: str | None
) -> None:
    route = upstream.post(OPENAI_URL).respond(json={})
    body = {"model": "mini", "messages": [*USER, {"role": role, "content": "hi"}]}

    response = await proxy.post("/v1/chat/completions", json=body)

    error = assert_error(response, 400)
    assert error["param"] in {"messages[1]", "messages[1].role"}
    assert not route.called


UPSTREAM_4XX = [400, 404, 409, 413, 422]  # 401 and 403: tests/integration/test_upstream_auth.py


@pytest.mark.parametrize("status", UPSTREAM_4XX)
@STREAM_MODES
async def test_upstream_4xx_keeps_status_and_message(
    proxy: httpx.AsyncClient, upstream: respx.Router, status: int, stream: bool
) -> None:
    upstream_error = {
        "message": f"Upstream says no ({status}).",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "upstream_code",
    }
    upstream.post(OPENAI_URL).respond(status, json={"error": upstream_error})

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    error = assert_error(response, status)
    assert error["message"] == upstream_error["message"]


@STREAM_MODES
async def test_upstream_4xx_without_json_body_keeps_status(
    proxy: httpx.AsyncClient, upstream: respx.Router, stream: bool
) -> None:
    upstream.post(OPENAI_URL).respond(404, text="<html>Not Found</html>")

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    assert_error(response, 404)


@STREAM_MODES
async def test_upstream_403_without_json_body_is_upstream_auth_failed(
    proxy: httpx.AsyncClient, upstream: respx.Router, stream: bool
) -> None:
    upstream.post(OPENAI_URL).respond(403, text="<html>Forbidden</html>")

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    assert assert_error(response, 502)["code"] == "upstream_auth_failed"


@STREAM_MODES
async def test_upstream_429_keeps_status_and_retry_after(
    proxy: httpx.AsyncClient, upstream: respx.Router, stream: bool
) -> None:
    body = {"error": {"message": "Rate limit reached.", "type": "rate_limit_error"}}
    upstream.post(OPENAI_URL).respond(429, json=body, headers={"retry-after": "17"})

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    error = assert_error(response, 429)
    assert response.headers["retry-after"] == "17"
    assert error["message"] == "Rate limit reached."


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529])
@STREAM_MODES
async def test_upstream_5xx_is_502(
    proxy: httpx.AsyncClient, upstream: respx.Router, status: int, stream: bool
) -> None:
    upstream.post(OPENAI_URL).respond(status, json={"error": {"message": "Overloaded"}})

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    assert_error(response, 502)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@STREAM_MODES
async def test_unreachable_upstream_is_502(anyio_backend: str, stream: bool) -> None:
    port = _closed_port()
    config = make_config(raw_config(openai_base=f"http://127.0.0.1:{port}/v1"))
    async with serve(config) as client:  # the production transport: a real refused connection
        response = await client.post("/v1/chat/completions", json=chat(stream=stream))

    error = assert_error(response, 502)
    assert f"(127.0.0.1:{port}," in error["message"]  # the host it tried, never the path


async def test_unreachable_upstream_names_the_host_through_httpx(anyio_backend: str) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    config = make_config(raw_config(openai_base="https://oa.example.test/v1?x=SECRET"))
    async with serve(config, transport=httpx.MockTransport(refuse)) as client:
        response = await client.post("/v1/chat/completions", json=chat())

    error = assert_error(response, 502)
    assert "oa.example.test:443" in error["message"]
    assert "SECRET" not in error["message"]


def _timing_out_config(mock_upstream: MockUpstream, timeout: float = 0.3) -> Any:
    raw = raw_config(openai_base=f"{mock_upstream.base_url}/v1")
    raw["providers"]["oa"]["timeout"] = timeout
    return make_config(raw)


@STREAM_MODES
async def test_upstream_timeout_is_504(
    mock_upstream: MockUpstream, anyio_backend: str, stream: bool
) -> None:
    frames = openai_frames(openai_text_chunks("late"))
    mock_upstream.add(Reply(frames=frames, delay=3) if stream else Reply(json={}, delay=3))
    async with serve(_timing_out_config(mock_upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat(stream=stream))

    error = assert_error(response, 504)
    assert error["type"] == "timeout_error"


async def test_upstream_stalling_after_first_chunk_ends_stream_with_timeout_event(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("a", "b")), hang_after=2))
    async with serve(_timing_out_config(mock_upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat(stream=True))

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done
    assert len(chunks) == 3
    assert chunks[-1]["error"]["type"] == "timeout_error"


def _assert_ends_with_one_error_event(
    response: httpx.Response, chunks_before: int
) -> dict[str, Any]:
    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done, "a failed stream must not end with [DONE]"
    assert len(chunks) == chunks_before + 1
    assert all("error" not in chunk for chunk in chunks[:-1])
    assert set(chunks[-1]) == {"error"}
    error = chunks[-1]["error"]
    assert isinstance(error["message"], str)
    assert error["message"]
    return dict(error)


async def test_upstream_error_event_mid_stream_is_relayed_as_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    upstream_error = {"message": "The server had an error.", "type": "server_error", "code": None}
    frames = openai_frames(openai_tool_chunks()[:3], done=False)
    frames += [Frame({"error": upstream_error}), Frame("[DONE]")]
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    error = _assert_ends_with_one_error_event(response, chunks_before=3)
    assert error["message"] == upstream_error["message"]
    assert error["type"] == "server_error"


async def test_upstream_read_error_mid_stream_becomes_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_tool_chunks()[:2], done=False)
    upstream.post(OPENAI_URL).mock(
        return_value=sse_response(frames, error=httpx.ReadError("connection reset"))
    )

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    _assert_ends_with_one_error_event(response, chunks_before=2)


async def test_dropped_connection_mid_stream_becomes_one_error_event(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(frames=openai_frames(openai_tool_chunks()), drop_after=3))
    config = make_config(raw_config(openai_base=f"{mock_upstream.base_url}/v1"))
    async with serve(config) as client:
        response = await client.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    _assert_ends_with_one_error_event(response, chunks_before=3)


async def test_stream_ending_without_finish_or_done_becomes_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_tool_chunks()[:4], done=False)
    upstream.post(OPENAI_URL).mock(return_value=sse_response(frames))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    _assert_ends_with_one_error_event(response, chunks_before=4)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(frames=openai_frames(openai_text_chunks("never sent")), drop_after=0),
        Reply(frames=[]),
        Reply(frames=[Frame(b": keep-alive\n\n")], drop_after=1),
    ],
    ids=["dropped", "empty-body", "only-a-comment-then-dropped"],
)
async def test_stream_cut_short_before_any_chunk_is_502(
    mock_upstream: MockUpstream, anyio_backend: str, reply: Reply
) -> None:
    mock_upstream.add(reply)
    config = make_config(raw_config(openai_base=f"{mock_upstream.base_url}/v1"))
    async with serve(config) as client:
        response = await client.post("/v1/chat/completions", json=chat(stream=True))

    assert_error(response, 502)
    assert mock_upstream.requests(OPENAI_PATH)


@pytest.mark.parametrize(
    "upstream_body",
    [b"not json", b'["a list"]', b'{"no": "choices"}'],
    ids=["invalid-json", "not-an-object", "no-choices"],
)
async def test_malformed_non_stream_answer_is_502(
    proxy: httpx.AsyncClient, upstream: respx.Router, upstream_body: bytes
) -> None:
    upstream.post(OPENAI_URL).respond(200, content=upstream_body, content_type="application/json")

    response = await proxy.post("/v1/chat/completions", json=chat())

    assert_error(response, 502)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/nowhere", 404),
        ("POST", "/v1/completions", 404),
        ("GET", "/", 404),
        ("GET", "/v1/chat/completions", 405),
        ("DELETE", "/v1/models", 405),
        ("POST", "/health", 405),
    ],
)
async def test_unknown_route_or_method_has_openai_error_shape(
    proxy: httpx.AsyncClient, method: str, path: str, status: int
) -> None:
    response = await proxy.request(method, path)

    assert_error(response, status)


INTERNAL_ERROR = {
    "error": {
        "message": "Internal error in the proxy.",
        "type": "api_error",
        "param": None,
        "code": "internal_error",
    }
}


@STREAM_MODES
async def test_exception_inside_the_proxy_is_500_with_a_fixed_message(
    proxy: httpx.AsyncClient, upstream: respx.Router, stream: bool
) -> None:
    upstream.post(OPENAI_URL).mock(side_effect=ZeroDivisionError("detail that must not show"))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))

    assert_error(response, 500)
    assert response.json() == INTERNAL_ERROR
    assert "Traceback" not in response.text


async def test_exception_inside_the_proxy_mid_stream_still_ends_with_one_error_event(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    frames = openai_frames(openai_tool_chunks()[:2], done=False)
    upstream.post(OPENAI_URL).mock(
        return_value=sse_response(frames, error=ZeroDivisionError("detail that must not show"))
    )

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True, tools=TOOLS))

    _assert_ends_with_one_error_event(response, chunks_before=2)
    assert "detail that must not show" not in response.text


@pytest.mark.parametrize("position", [0, 2], ids=["first-chunk", "mid-stream"])
async def test_malformed_upstream_chunk_never_cuts_the_stream_silently(
    proxy: httpx.AsyncClient, upstream: respx.Router, position: int
) -> None:
    chunks: list[Any] = openai_text_chunks("a", "b")
    chunks.insert(position, {"choices": [None]})
    upstream.post(OPENAI_URL).mock(return_value=sse_response(openai_frames(chunks)))

    response = await proxy.post("/v1/chat/completions", json=chat(stream=True))

    assert response.status_code in {200, 502}, "an upstream's garbage is not an internal error"
    if response.status_code == 200:
        client_chunks, done = parse_sse_body(response.content)
        assert done or set(client_chunks[-1]) == {"error"}


WRONG_TYPES: dict[str, Any] = {
    "presence_penalty-list": ("presence_penalty", [1]),
    "presence_penalty-object": ("presence_penalty", {"v": 1}),
    "frequency_penalty-string": ("frequency_penalty", "0.5"),
    "seed-boolean": ("seed", True),
    "seed-float": ("seed", 1.5),
    "logprobs-string": ("logprobs", "yes"),
    "response_format-string": ("response_format", "json_object"),
    "metadata-list": ("metadata", ["a"]),
    "reasoning_effort-number": ("reasoning_effort", 3),
}


@pytest.mark.parametrize(("field", "value"), WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
@pytest.mark.parametrize("model", ["mini", "claude", "gemini", "demo"])
async def test_a_known_field_with_the_wrong_type_is_400_naming_it_for_every_kind(
    anyio_backend: str, model: str, field: str, value: Any
) -> None:
    """Unknown fields still go to openai upstreams as sent; known ones are type-checked at the
    edge, so no kind relays `presence_penalty: [1]` for the upstream to answer (or not)."""
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": "http://gemini.test", "api_key": "k"}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    upstream = respx.Router(assert_all_mocked=True)
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream.async_handler)
    ) as proxy:
        response = await proxy.post("/v1/chat/completions", json=chat(model, **{field: value}))

    error = assert_error(response, 400)
    assert error["param"] == field
    assert field in error["message"]
    assert not upstream.calls
