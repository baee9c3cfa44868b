"""Budgets on a Redis store, in-process: a store that goes down follows `on_error` (closed:
503 store_unavailable before anything goes upstream, and /v1/spend cannot be read; open:
served uncounted), and counting resumes when it is back. A memory store with budgets warns
at start-up."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

from tests.helpers.redis_server import RedisServer
from tests.integration.conftest import assert_error, make_config, serve
from tests.integration.test_budgets import ALICE, Upstream, auth, chat, config

pytestmark = pytest.mark.anyio


def redis_config(url: str, on_error: str) -> dict[str, Any]:
    raw = config(store={"kind": "redis", "url": url, "on_error": on_error})
    raw["server"]["keys"][0]["budget"] = {"usd": 0.0002, "period": "day"}  # two requests
    return raw


async def test_closed_refuses_while_the_store_is_down(private_redis: RedisServer) -> None:
    upstream = Upstream()
    raw = redis_config(private_redis.url, "closed")
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        first = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        private_redis.stop()
        refused = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        unread = await client.get("/v1/spend", headers=auth(ALICE))
        private_redis.start()
        await asyncio.sleep(1.1)  # the store is retried a second after it failed
        again = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        spent = (await client.get("/v1/spend", headers=auth(ALICE))).json()
    assert first.status_code == 200
    assert assert_error(refused, 503)["code"] == "store_unavailable"
    assert assert_error(unread, 503)["code"] == "store_unavailable"
    assert len(upstream.bodies) == 2
    # A restarted Redis has forgotten everything (no persistence in the tests).
    assert again.status_code == 200
    assert spent["budgets"][0]["spent_usd"] == 0.0001


async def test_open_serves_uncounted_while_the_store_is_down(private_redis: RedisServer) -> None:
    upstream = Upstream()
    raw = redis_config(private_redis.url, "open")
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        private_redis.stop()
        statuses = [
            (
                await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
            ).status_code
            for _ in range(3)
        ]
        metrics = (await client.get("/metrics")).text
    assert statuses == [200] * 3, "over alice's budget of two, but nothing can count it"
    assert 'toolrelay_store_errors_total{operation="spend"}' in metrics


async def test_budgets_on_the_memory_store_warn_at_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raw = config()
    raw["server"]["keys"][0]["budget"] = {"usd": 1, "period": "day"}
    with caplog.at_level(logging.WARNING, logger="toolrelay.spend"):
        async with serve(make_config(raw), client_key=None):
            pass
    assert any("kind: memory" in record.getMessage() for record in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolrelay.spend"):
        async with serve(make_config(config()), client_key=None):
            pass
    assert not any("kind: memory" in record.getMessage() for record in caplog.records)
