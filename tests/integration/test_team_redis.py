"""Replicas sharing one real Redis, in-process: limits hold across app instances, a cooldown
one instance starts spares the other the same failure, and a Redis stopped mid-run is handled
as `on_error` says: served uncounted (`open`) or refused with 503 (`closed`), never a 500 or
a hang."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest

from app.config import Config
from app.openai_types import chat_request_from_wire
from app.routing.affinity import conversation_key
from app.routing.balancer import Balancer, Cooldowns
from app.routing.router import Router
from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply
from tests.helpers.redis_server import RedisServer
from tests.helpers.upstream_answers import openai_tool_completion
from tests.integration.conftest import assert_error, chat, make_config, serve
from tests.integration.test_team_keys_limits import (
    ALICE_KEY,
    MESSAGES,
    team_config,
    with_limits,
)

pytestmark = pytest.mark.anyio


def redis_config(upstream: MockUpstream, url: str, on_error: str = "open") -> dict[str, Any]:
    store = {"kind": "redis", "url": url, "on_error": on_error, "prefix": "test:"}
    return with_limits(team_config(upstream, store=store), "alice", rpm=3)


async def replicas(stack: AsyncExitStack, raw: dict[str, Any]) -> list[httpx.AsyncClient]:
    return [
        await stack.enter_async_context(serve(make_config(raw), client_key=ALICE_KEY))
        for _ in range(2)
    ]


async def test_two_instances_share_a_keys_limit(
    mock_upstream: MockUpstream, redis_url: str
) -> None:
    async with AsyncExitStack() as stack:
        first, second = await replicas(stack, redis_config(mock_upstream, redis_url))
        statuses = [
            (await client.post("/v1/chat/completions", json=chat("demo"))).status_code
            for client in (first, second, first, second)
        ]
    assert statuses == [200, 200, 200, 429]


async def test_a_cooldown_one_instance_starts_spares_the_other(
    mock_upstream: MockUpstream, redis_url: str
) -> None:
    """`pool` has two deployments. Instance A's first one (the conversation's home) answers
    429 (retry-after 30): A retries on the second and publishes the cooldown; instance B then
    goes straight to the second, where a fresh balancer would have started with the first."""
    raw = redis_config(mock_upstream, redis_url)
    raw["router"] = {"retries": 1, "backoff": 0}
    raw["models"].append(
        {
            "name": "pool",
            "deployments": [
                {"provider": "oa", "model": "gpt-first"},
                {"provider": "oa", "model": "gpt-second"},
            ],
        }
    )
    raw["server"]["keys"][0]["models"].append("pool")
    limited = {"error": {"message": "slow down", "type": "requests"}}
    mock_upstream.add(Reply(429, json=limited, headers={"retry-after": "30"}))
    mock_upstream.add(Reply(json=openai_tool_completion()))
    mock_upstream.add(Reply(json=openai_tool_completion()))
    async with AsyncExitStack() as stack:
        first, second = await replicas(stack, raw)
        body = homed_on_first(make_config(raw), chat("pool"))
        assert (await first.post("/v1/chat/completions", json=body)).status_code == 200
        assert (await second.post("/v1/chat/completions", json=body)).status_code == 200
    models = [exchange.body["model"] for exchange in mock_upstream.requests(OPENAI_PATH)]
    assert models == ["gpt-first", "gpt-second", "gpt-second"]


def homed_on_first(config: Config, body: dict[str, Any]) -> dict[str, Any]:
    """`body` with a `prompt_cache_key` whose conversation's home (app/routing/affinity.py)
    is the model's first deployment."""
    route = Router(config).resolve(body["model"])
    for n in range(100):
        keyed = body | {"prompt_cache_key": f"conversation-{n}"}
        conversation = conversation_key(chat_request_from_wire(keyed))
        picked = Balancer(Cooldowns(config.router.cooldown)).pick(route, 0.0, (), conversation)
        if picked is route.deployments[0]:
            return keyed
    raise AssertionError("no conversation homed on the first deployment")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
async def test_redis_down_with_on_error_open_serves_uncounted(
    mock_upstream: MockUpstream, private_redis: RedisServer, path: str
) -> None:
    raw = redis_config(mock_upstream, private_redis.url, on_error="open")
    body = chat("demo") if path.endswith("completions") else {**MESSAGES, "model": "demo"}
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        assert (await client.post(path, json=body)).status_code == 200
        private_redis.stop()
        started = time.monotonic()
        statuses = [(await client.post(path, json=body)).status_code for _ in range(4)]
        elapsed = time.monotonic() - started
        metrics = (await client.get("/metrics")).text
    assert statuses == [200] * 4, "over alice's rpm of 3, but nothing can count it"
    assert elapsed < 2, "a dead store must cost at most its short timeout, not a hang"
    assert 'toolrelay_store_errors_total{operation="admit"} 4.0' in metrics


@pytest.mark.parametrize(
    ("path", "error_type"),
    [("/v1/chat/completions", "api_error"), ("/v1/messages", "api_error")],
)
async def test_redis_down_with_on_error_closed_refuses_with_503(
    mock_upstream: MockUpstream,
    private_redis: RedisServer,
    caplog: pytest.LogCaptureFixture,
    path: str,
    error_type: str,
) -> None:
    raw = redis_config(mock_upstream, private_redis.url, on_error="closed")
    body = chat("demo") if path.endswith("completions") else {**MESSAGES, "model": "demo"}
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        private_redis.stop()
        refused = [await client.post(path, json=body) for _ in range(3)]
        private_redis.start()
        await asyncio.sleep(1.1)  # the store is retried a second after it failed
        recovered = await client.post(path, json=body)
    for response in refused:
        assert response.status_code == 503
        if path.endswith("completions"):
            assert assert_error(response, 503)["code"] == "store_unavailable"
        else:
            assert response.json()["error"]["type"] == error_type
    assert recovered.status_code == 200
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolrelay.store"]
    assert len([w for w in warnings if "failed" in w]) == 1, "warned once, not per request"
    assert any("answers again" in w for w in warnings)
