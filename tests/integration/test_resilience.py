"""Retries, fallbacks, cooldowns, timeouts and spreading over deployments, against a real
upstream on 127.0.0.1 (tests/helpers/mock_upstream.py), so connection resets, delays and stalls
happen on real sockets. Timings are asserted on the mock's clock (when requests arrived), never
on the proxy's own speed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from tests.helpers.mock_upstream import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    MockUpstream,
    Reply,
    openai_frames,
)
from tests.helpers.openai_stream import parse_sse_body
from tests.helpers.upstream_answers import (
    CALLS,
    TOOLS,
    USAGE,
    openai_text_chunks,
    openai_tool_completion,
)
from tests.integration.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    PROVIDER_KEY,
    USER,
    assert_error,
    make_config,
    serve,
)

pytestmark = pytest.mark.anyio

OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
UNAVAILABLE = {"error": {"message": "try later", "type": "server_error"}}


def resilient_config(upstream: MockUpstream, **router: Any) -> dict[str, Any]:
    openai_base = f"{upstream.base_url}/v1"
    return {
        "server": {"api_keys": [CLIENT_KEY]},
        "router": {"retries": 2, "backoff": 0.01, "deadline": 10} | router,
        "providers": {
            "oa1": {"kind": "openai", "base_url": openai_base, "api_key": PROVIDER_KEY},
            "oa2": {"kind": "openai", "base_url": openai_base, "api_key": PROVIDER_KEY},
            "an": {"kind": "anthropic", "base_url": upstream.base_url, "api_key": ANTHROPIC_KEY},
            "idle": {
                "kind": "openai",
                "base_url": openai_base,
                "api_key": PROVIDER_KEY,
                "timeouts": {"idle": 0.3},
            },
        },
        "models": [
            {"name": "mini", "provider": "oa1", "model": "gpt-mini"},
            {
                "name": "pair",
                "deployments": [
                    {"provider": "oa1", "model": "m-a", "weight": 3},
                    {"provider": "oa2", "model": "m-b", "weight": 1},
                ],
                "timeouts": {"first_token": 0.3},
            },
            {
                "name": "slow",
                "provider": "oa1",
                "model": "m-slow",
                "timeouts": {"first_token": 0.3},
            },
            {"name": "claude", "provider": "an", "model": "claude-x", "fallbacks": ["mini"]},
            {"name": "stalls", "provider": "idle", "model": "m-idle"},
        ],
    }


def body(model: str, *, stream: bool = False) -> dict[str, Any]:
    return {"model": model, "messages": USER, "tools": TOOLS, "stream": stream}


def upstream_models(upstream: MockUpstream, path: str = OPENAI_PATH) -> list[str]:
    return [exchange.body["model"] for exchange in upstream.requests(path)]


def assert_tool_answer(answer: dict[str, Any], model: str) -> None:
    assert answer["model"] == model
    (choice,) = answer["choices"]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        (name, arguments) for _, name, arguments in CALLS
    ]


async def test_429_with_retry_after_is_waited_for_then_retried(
    mock_upstream: MockUpstream, anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    limited = {"error": {"message": "Rate limit reached", "type": "requests"}}
    mock_upstream.add(Reply(429, json=limited, headers={"retry-after-ms": "400"}))
    mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini"))

    assert response.status_code == 200
    assert_tool_answer(response.json(), "mini")
    first, second = mock_upstream.requests(OPENAI_PATH)
    assert second.received_at - first.received_at >= 0.39
    (fields,) = [r.fields for r in caplog.records if r.name == "toolrelay.http"]
    assert (fields["model"], fields["attempts"]) == ("mini", 2)
    assert [attempt.rpartition("=")[2] for attempt in fields["tried"]] == ["429", "200"]
    assert fields["prompt_tokens"] == USAGE["prompt_tokens"]


async def test_a_429_whose_wait_outlasts_the_deadline_is_returned_at_once(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    limited = {"error": {"message": "Rate limit reached", "type": "requests"}}
    mock_upstream.add(Reply(429, json=limited, headers={"retry-after": "30"}))
    async with serve(make_config(resilient_config(mock_upstream, deadline=2))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini"))

    assert_error(response, 429)
    assert response.headers["retry-after"] == "30"
    assert len(mock_upstream.requests(OPENAI_PATH)) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_529_falls_back_to_a_model_of_another_provider(
    mock_upstream: MockUpstream, anyio_backend: str, stream: bool
) -> None:
    for _ in range(3):  # the first attempt and two retries
        mock_upstream.add(Reply(529, json=OVERLOADED), path=ANTHROPIC_PATH)
    if stream:
        mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("from ", "mini"))))
    else:
        mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("claude", stream=stream))

    assert response.status_code == 200
    assert response.headers["x-toolrelay-model"] == "mini"
    assert len(mock_upstream.requests(ANTHROPIC_PATH)) == 3
    (fallback,) = mock_upstream.requests(OPENAI_PATH)
    assert fallback.body["model"] == "gpt-mini"
    assert fallback.body["messages"] == USER  # OpenAI's shape, not Anthropic's
    assert fallback.body["tools"] == TOOLS
    if stream:
        chunks, done = parse_sse_body(response.content)
        assert done
        assert {chunk["model"] for chunk in chunks} == {"mini"}
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == (
            "from mini"
        )
    else:
        assert_tool_answer(response.json(), "mini")


async def test_without_fallbacks_the_last_retryable_error_is_returned(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    for _ in range(3):
        mock_upstream.add(Reply(503, json=UNAVAILABLE))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini"))

    assert_error(response, 502)
    assert response.headers["x-toolrelay-model"] == "mini"
    assert len(mock_upstream.requests(OPENAI_PATH)) == 3


async def test_a_client_error_is_never_retried(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    bad = {"error": {"message": "bad tools", "type": "invalid_request_error"}}
    mock_upstream.add(Reply(400, json=bad))
    mock_upstream.add(Reply(json=openai_tool_completion()))  # must stay unused
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini"))

    assert_error(response, 400)
    assert len(mock_upstream.requests(OPENAI_PATH)) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_a_connection_reset_before_the_first_byte_is_retried(
    mock_upstream: MockUpstream, anyio_backend: str, stream: bool
) -> None:
    mock_upstream.add(Reply(reset=True))
    if stream:
        mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("ok"))))
    else:
        mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini", stream=stream))

    assert response.status_code == 200
    assert len(mock_upstream.requests(OPENAI_PATH)) == 2
    if stream:
        assert parse_sse_body(response.content)[1], "the retried stream is complete"
    else:
        assert_tool_answer(response.json(), "mini")


async def test_a_reset_after_the_first_byte_ends_the_stream_with_an_error_and_no_retry(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("a", "b", "c")), drop_after=2))
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("never", "sent"))))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("mini", stream=True))

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done
    assert chunks[-1]["error"]["code"] == "upstream_unavailable"
    assert "never" not in response.text
    assert len(mock_upstream.requests(OPENAI_PATH)) == 1


async def test_a_slow_first_token_moves_on_to_another_deployment(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("late")), delay=3))
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("on ", "time"))))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("pair", stream=True))

    assert response.status_code == 200
    assert response.headers["x-toolrelay-model"] == "pair"
    assert "on time" in "".join(
        chunk["choices"][0]["delta"].get("content") or ""
        for chunk in parse_sse_body(response.content)[0]
    )
    assert upstream_models(mock_upstream) == ["m-a", "m-b"]
    slow, _ = mock_upstream.requests(OPENAI_PATH)
    assert slow.closed.wait(1), "the abandoned attempt's connection was closed"


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_a_first_token_that_never_comes_is_a_504(
    mock_upstream: MockUpstream, anyio_backend: str, stream: bool
) -> None:
    for _ in range(3):
        mock_upstream.add(Reply(json={}, delay=3) if stream is False else Reply(frames=[], delay=3))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("slow", stream=stream))

    error = assert_error(response, 504)
    assert error["type"] == "timeout_error"
    if stream:
        assert "first token within 0.3 s" in error["message"]
    assert len(mock_upstream.requests(OPENAI_PATH)) == 3


async def test_a_stalled_stream_ends_with_an_idle_timeout_event(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("a", "b")), hang_after=2))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        response = await client.post("/v1/chat/completions", json=body("stalls", stream=True))

    assert response.status_code == 200
    chunks, done = parse_sse_body(response.content)
    assert not done
    assert chunks[-1]["error"]["type"] == "timeout_error"
    assert len(mock_upstream.requests(OPENAI_PATH)) == 1


async def test_conversations_spread_over_deployments_by_weight(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    for _ in range(200):
        mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        for i in range(200):
            conversation = body("pair") | {"prompt_cache_key": f"conversation-{i}"}
            response = await client.post("/v1/chat/completions", json=conversation)
            assert response.status_code == 200

    counts = Counter(upstream_models(mock_upstream))
    assert abs(counts["m-a"] - 150) <= 15
    assert abs(counts["m-b"] - 50) <= 15


async def test_the_turns_of_a_conversation_stay_on_one_deployment(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    for _ in range(16):
        mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(resilient_config(mock_upstream))) as client:
        for first in ("one task", "another task"):
            for turn in range(8):
                messages = [{"role": "user", "content": first}] + [
                    {"role": "user", "content": f"turn {n}"} for n in range(turn)
                ]
                conversation = body("pair") | {"messages": messages}
                assert (await client.post("/v1/chat/completions", json=conversation)).is_success

    models = upstream_models(mock_upstream)
    assert len(set(models[:8])) == 1
    assert len(set(models[8:])) == 1


async def test_a_failing_deployment_cools_down_and_comes_back(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    cooldown = {"failures": 2, "window": 60, "seconds": 0.5}
    config = make_config(resilient_config(mock_upstream, cooldown=cooldown))
    # Two requests: each tries m-a first (weight 3), gets a 503, and is served by m-b.
    for _ in range(2):
        mock_upstream.add(Reply(503, json=UNAVAILABLE))
        mock_upstream.add(Reply(json=openai_tool_completion()))
    for _ in range(12):
        mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(config) as client:
        for _ in range(2):
            assert (await client.post("/v1/chat/completions", json=body("pair"))).is_success
        assert upstream_models(mock_upstream) == ["m-a", "m-b", "m-a", "m-b"]
        for _ in range(4):  # m-a is cooling down: everything goes to m-b
            assert (await client.post("/v1/chat/completions", json=body("pair"))).is_success
        assert upstream_models(mock_upstream)[4:] == ["m-b"] * 4
        await anyio.sleep(0.6)
        for _ in range(4):
            assert (await client.post("/v1/chat/completions", json=body("pair"))).is_success

    assert "m-a" in upstream_models(mock_upstream)[8:], "m-a is back after its cooldown"
