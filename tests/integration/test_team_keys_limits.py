"""Running it for a team, in-process: named keys (plain and SHA-256), model allow-lists on every
way of naming a model, and limits per key and per model, with each client API's error shape.
Upstreams are the real mock server on 127.0.0.1 (answers with usage) or the built-in demo."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import httpx
import pytest

from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import USAGE, openai_text_chunks, openai_tool_completion
from tests.integration.conftest import PROVIDER_KEY, assert_error, chat, make_config, serve

pytestmark = pytest.mark.anyio

ALICE_KEY = "alice-key-SECRET-111"
BOB_KEY = "bob-key-SECRET-222"
MESSAGES = {"model": "mini", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def team_config(upstream: MockUpstream, **server: Any) -> dict[str, Any]:
    """Alice (plain key, allowed `mini`, `demo` and `oa/*`) and Bob (a SHA-256 digest, every
    model), both on the mock upstream's openai provider."""
    keys = [
        {"name": "alice", "key": ALICE_KEY, "models": ["mini", "demo", "oa/*"]},
        {"name": "bob", "key_sha256": hashlib.sha256(BOB_KEY.encode()).hexdigest()},
    ]
    return {
        "server": {"keys": keys, **server},
        "router": {"retries": 0},
        "providers": {
            "oa": {
                "kind": "openai",
                "base_url": f"{upstream.base_url}/v1",
                "api_key": PROVIDER_KEY,
            },
            "demo": {"kind": "demo"},
        },
        "models": [
            {"name": "mini", "provider": "oa", "model": "gpt-4o-mini", "fallbacks": ["big"]},
            {"name": "big", "provider": "oa", "model": "gpt-4o"},
            {"name": "demo", "provider": "demo", "model": "demo"},
        ],
    }


def with_limits(raw: dict[str, Any], key: str, **limits: int) -> dict[str, Any]:
    for entry in raw["server"]["keys"]:
        if entry["name"] == key:
            entry["limits"] = limits
    return raw


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def test_each_key_works_and_a_wrong_one_is_401(mock_upstream: MockUpstream) -> None:
    async with serve(make_config(team_config(mock_upstream)), client_key=None) as client:
        for key in (ALICE_KEY, BOB_KEY):
            response = await client.post(
                "/v1/chat/completions", json=chat("demo"), headers=auth(key)
            )
            assert response.status_code == 200, response.text
        wrong = await client.post("/v1/chat/completions", json=chat("demo"), headers=auth("nope"))
        assert_error(wrong, 401)
        by_header = await client.post("/v1/messages", json=MESSAGES, headers={"x-api-key": "no"})
        assert by_header.status_code == 401
        assert by_header.json()["error"]["type"] == "authentication_error"


@pytest.mark.parametrize(
    ("model", "allowed"),
    [("mini", True), ("big", False), ("oa/gpt-4o", True), ("demo/demo", False)],
)
async def test_the_allow_list_covers_every_way_of_naming_a_model(
    mock_upstream: MockUpstream, model: str, allowed: bool
) -> None:
    mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        response = await client.post("/v1/chat/completions", json=chat(model))
    if allowed:
        assert response.status_code == 200, response.text
    else:
        error = assert_error(response, 403)
        assert (error["code"], error["param"]) == ("model_not_allowed", "model")
        assert "alice" in error["message"]
        assert mock_upstream.requests(OPENAI_PATH) == []


async def test_a_refused_model_on_the_messages_api_is_an_anthropic_403(
    mock_upstream: MockUpstream,
) -> None:
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        response = await client.post("/v1/messages", json={**MESSAGES, "model": "big"})
        counted = await client.post("/v1/messages/count_tokens", json={**MESSAGES, "model": "big"})
    for refused in (response, counted):
        assert refused.status_code == 403
        assert refused.json()["type"] == "error"
        assert refused.json()["error"]["type"] == "permission_error"


async def test_models_lists_only_what_the_key_may_use(mock_upstream: MockUpstream) -> None:
    async with serve(make_config(team_config(mock_upstream)), client_key=None) as client:
        alice = await client.get("/v1/models", headers=auth(ALICE_KEY))
        bob = await client.get("/v1/models", headers=auth(BOB_KEY))
    assert [model["id"] for model in alice.json()["data"]] == ["mini", "demo"]
    assert [model["id"] for model in bob.json()["data"]] == ["mini", "big", "demo"]


async def test_a_fallback_the_key_may_not_use_is_skipped(mock_upstream: MockUpstream) -> None:
    """`mini` falls back to `big`, which alice may not use: her request ends with mini's own
    failure, and `big` is never called."""
    mock_upstream.add(Reply(500, json={"error": {"message": "boom", "type": "server_error"}}))
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        response = await client.post("/v1/chat/completions", json=chat("mini"))
    assert_error(response, 502)
    assert len(mock_upstream.requests(OPENAI_PATH)) == 1


async def test_rpm_refuses_with_429_and_retry_after_in_each_api_shape(
    mock_upstream: MockUpstream,
) -> None:
    raw = with_limits(team_config(mock_upstream), "alice", rpm=2)
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        for _ in range(2):
            ok = await client.post("/v1/chat/completions", json=chat("demo"))
            assert ok.status_code == 200
        refused = await client.post("/v1/chat/completions", json=chat("demo"))
        refused_messages = await client.post("/v1/messages", json={**MESSAGES, "model": "demo"})
        bob = await client.post("/v1/chat/completions", json=chat("demo"), headers=auth(BOB_KEY))
    error = assert_error(refused, 429)
    assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
    assert "alice" in error["message"]
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused_messages.status_code == 429
    assert refused_messages.json()["error"]["type"] == "rate_limit_error"
    assert 1 <= int(refused_messages.headers["retry-after"]) <= 60
    assert bob.status_code == 200, "another key's budget is its own"


async def test_a_model_limit_is_shared_by_every_key(mock_upstream: MockUpstream) -> None:
    raw = team_config(mock_upstream, limits={"demo": {"rpm": 3}})
    async with serve(make_config(raw), client_key=None) as client:
        statuses = [
            (await client.post("/v1/chat/completions", json=chat("demo"), headers=auth(key)))
            for key in (ALICE_KEY, BOB_KEY, ALICE_KEY, BOB_KEY)
        ]
    assert [response.status_code for response in statuses] == [200, 200, 200, 429]
    assert "the model 'demo'" in statuses[-1].json()["error"]["message"]


async def test_tpm_counts_a_streams_usage_the_client_did_not_ask_for(
    mock_upstream: MockUpstream,
) -> None:
    """Alice's stream asks for no usage; the proxy asked the upstream for it all the same
    (and kept the usage chunk from her), then counted its 123 tokens against her tpm of 100."""
    usage_chunk = {**openai_text_chunks("x")[0], "choices": [], "usage": USAGE}
    mock_upstream.add(Reply(frames=openai_frames([*openai_text_chunks("Hi", "!"), usage_chunk])))
    raw = with_limits(team_config(mock_upstream), "alice", tpm=100)
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        stream = await client.post("/v1/chat/completions", json=chat("mini", stream=True))
        refused = await client.post("/v1/chat/completions", json=chat("mini"))
    assert stream.status_code == 200
    assert '"usage"' not in stream.text
    (sent,) = mock_upstream.requests(OPENAI_PATH)
    assert sent.body["stream_options"] == {"include_usage": True}
    error = assert_error(refused, 429)
    assert (error["type"], error["code"]) == ("tokens", "rate_limit_exceeded")


async def test_concurrent_holds_a_place_until_the_answer_is_over(
    mock_upstream: MockUpstream,
) -> None:
    slow = openai_frames(openai_text_chunks("slow"))
    slow[-2] = type(slow[-2])(slow[-2].data, delay=0.5)  # the finish chunk comes late
    mock_upstream.add(Reply(frames=slow))
    mock_upstream.add(Reply(frames=openai_frames(openai_text_chunks("fast"))))
    raw = with_limits(team_config(mock_upstream), "alice", concurrent=1)
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        first = asyncio.ensure_future(
            client.post("/v1/chat/completions", json=chat("mini", stream=True))
        )
        while not mock_upstream.requests(OPENAI_PATH):
            await asyncio.sleep(0.01)
        second = await client.post("/v1/chat/completions", json=chat("mini", stream=True))
        assert (await first).status_code == 200
        third = await client.post("/v1/chat/completions", json=chat("mini", stream=True))
    error = assert_error(second, 429)
    assert "(requests at once: 1)" in error["message"]
    assert second.headers["retry-after"] == "1"
    assert third.status_code == 200, "the first stream's place was freed when it ended"


async def test_the_overhead_header_is_on_every_answer(mock_upstream: MockUpstream) -> None:
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        answers: list[httpx.Response] = [
            await client.post("/v1/chat/completions", json=chat("demo")),
            await client.post("/v1/chat/completions", json=chat("demo", stream=True)),
            await client.post("/v1/chat/completions", json=chat("big")),
            await client.get("/health"),
        ]
    for response in answers:
        assert float(response.headers["x-toolrelay-overhead-ms"]) >= 0
