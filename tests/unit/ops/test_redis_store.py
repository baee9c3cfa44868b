"""The Redis link and what replicas share through it, against a real redis-server: calls
bounded by a timeout, a store that goes away failing fast (and warned about once, without
the URL's password) until it answers again; thinking blocks (scoped per key) and deployment
cooldowns round-tripped, and both best effort when the store is down."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from typing import Any

import pytest
import redis

from app.config import CooldownConfig, parse_config
from app.ops.limits import StoreDown
from app.ops.redis_link import RETRY_SECONDS, RedisLink
from app.ops.redis_shared import RedisCooldowns, RedisThinkingStore
from app.reasoning.store import TTL_SECONDS, ScopedThinkingStore
from app.routing.balancer import Cooldowns
from app.routing.router import Router
from tests.helpers.redis_server import RedisServer

pytestmark = pytest.mark.anyio

PASSWORD = "secretpw"
TIMEOUT = 0.3
BLOCKS = [{"type": "thinking", "thinking": "Weigh it.", "signature": "c2ln"}]
OTHER_BLOCKS = [{"type": "redacted_thinking", "data": "ZGF0YQ=="}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def require_password(server: RedisServer) -> str:
    """Makes the server ask for PASSWORD; returns a URL that carries it."""
    admin = redis.Redis.from_url(server.url)
    try:
        admin.config_set("requirepass", PASSWORD)
    finally:
        admin.close()
    return f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"


def store_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "toolrelay.store"]


def ping(link: RedisLink) -> Awaitable[Any]:
    return link.call("ping", link.client.ping)


@pytest.fixture
def stopped_later(private_redis: RedisServer) -> Iterator[RedisServer]:
    """private_redis, resumed if a test paused it, so the fixture can stop it."""
    yield private_redis
    if private_redis.process is not None:
        private_redis.process.send_signal(signal.SIGCONT)


# -- RedisLink ------------------------------------------------------------------------------


async def test_a_store_that_goes_away_fails_fast_warns_once_and_comes_back(
    private_redis: RedisServer, caplog: pytest.LogCaptureFixture, anyio_backend: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolrelay.store")
    url = require_password(private_redis)
    errors: list[str] = []
    clock = Clock()
    link = RedisLink(url, TIMEOUT, errors.append, clock)
    assert PASSWORD not in link.where
    try:
        assert await ping(link) is True
        assert errors == []
        assert store_logs(caplog) == []

        private_redis.stop()
        started = time.perf_counter()
        with pytest.raises(StoreDown):
            await ping(link)
        assert time.perf_counter() - started < 2, "a dead store must not hang a request"
        assert errors == ["ping"]

        # Within RETRY_SECONDS: failing at once, without trying the server.
        attempts: list[str] = []

        def attempt() -> Awaitable[Any]:
            attempts.append("tried")
            return link.client.ping()

        clock.now += RETRY_SECONDS / 2
        started = time.perf_counter()
        with pytest.raises(StoreDown):
            await link.call("admit", attempt)
        assert time.perf_counter() - started < TIMEOUT / 10
        assert attempts == []
        assert errors == ["ping", "admit"]

        # Past RETRY_SECONDS, still down: tried again, fails again, but no second warning.
        clock.now += RETRY_SECONDS
        with pytest.raises(StoreDown):
            await link.call("settle", attempt)
        assert attempts == ["tried"]
        assert errors == ["ping", "admit", "settle"]
        logs = store_logs(caplog)
        assert len(logs) == 1, logs
        assert f"127.0.0.1:{private_redis.port}" in logs[0]
        assert "failed" in logs[0]
        assert "ping" in logs[0]

        private_redis.start()  # the same port
        require_password(private_redis)
        with pytest.raises(StoreDown):
            await ping(link)  # still within a second of the last failure
        assert errors[-1] == "ping"
        clock.now += RETRY_SECONDS + 0.01
        assert await ping(link) is True
        assert await ping(link) is True
        logs = store_logs(caplog)
        assert len(logs) == 2, logs
        assert "answers again" in logs[1]
        assert len(errors) == 4

        # A second outage is warned about again.
        private_redis.stop()
        with pytest.raises(StoreDown):
            await ping(link)
        assert len(store_logs(caplog)) == 3
        for record in caplog.records:
            assert PASSWORD not in record.getMessage()
            assert PASSWORD not in str(record.args)
    finally:
        await link.aclose()


async def test_fail_fast_lasts_about_a_second_of_real_time(
    private_redis: RedisServer, anyio_backend: str
) -> None:
    errors: list[str] = []
    link = RedisLink(private_redis.url, TIMEOUT, errors.append)
    try:
        assert await ping(link) is True
        private_redis.stop()
        with pytest.raises(StoreDown):
            await ping(link)
        failed_at = time.monotonic()
        private_redis.start()
        with pytest.raises(StoreDown):
            await ping(link)  # up again, but not tried yet
        time.sleep(max(0.0, failed_at + RETRY_SECONDS + 0.05 - time.monotonic()))
        assert await ping(link) is True
        assert errors == ["ping", "ping"]
    finally:
        await link.aclose()


async def test_a_server_that_stops_answering_times_out(
    stopped_later: RedisServer, caplog: pytest.LogCaptureFixture, anyio_backend: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolrelay.store")
    errors: list[str] = []
    link = RedisLink(stopped_later.url, TIMEOUT, errors.append)
    try:
        assert await ping(link) is True
        assert stopped_later.process is not None
        stopped_later.process.send_signal(signal.SIGSTOP)
        started = time.perf_counter()
        with pytest.raises(StoreDown):
            await link.call("admit", link.client.ping)
        assert time.perf_counter() - started < 2
        assert errors == ["admit"]
        assert any("TimeoutError" in log for log in store_logs(caplog))
    finally:
        await link.aclose()


async def test_a_slow_call_is_cut_at_the_timeout(anyio_backend: str) -> None:
    errors: list[str] = []
    link = RedisLink("redis://127.0.0.1:1/0", 0.1, errors.append)
    started = time.perf_counter()
    with pytest.raises(StoreDown):
        await link.call("thinking", lambda: asyncio.sleep(5))
    assert time.perf_counter() - started < 1
    assert errors == ["thinking"]
    await link.aclose()


@pytest.mark.parametrize("password", ["", "wrongpw"])
async def test_a_refusing_store_is_down_too(
    private_redis: RedisServer,
    caplog: pytest.LogCaptureFixture,
    anyio_backend: str,
    password: str,
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolrelay.store")
    require_password(private_redis)
    errors: list[str] = []
    url = f"redis://:{password}@127.0.0.1:{private_redis.port}/0" if password else None
    link = RedisLink(url or private_redis.url, TIMEOUT, errors.append)
    try:
        with pytest.raises(StoreDown):
            await ping(link)
        assert errors == ["ping"]
        logs = store_logs(caplog)
        assert len(logs) == 1
        assert PASSWORD not in logs[0]
        if password:
            assert password not in logs[0]
    finally:
        await link.aclose()


# -- thinking blocks ------------------------------------------------------------------------


@pytest.fixture
async def link(redis_url: str, anyio_backend: str) -> AsyncIterator[RedisLink]:
    errors: list[str] = []
    link = RedisLink(redis_url, 0.5, errors.append)
    yield link
    await link.aclose()
    assert errors == []


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:8]}:"


async def test_thinking_blocks_round_trip(link: RedisLink, prefix: str) -> None:
    store = RedisThinkingStore(link, prefix)
    await store.save(["call_1", "call_2"], BLOCKS)
    assert await store.load(["call_1"]) == BLOCKS
    assert await store.load(["call_2"]) == BLOCKS
    assert await store.load(["unknown", "call_2"]) == BLOCKS
    assert await store.load(["unknown"]) is None
    for call_id in ("call_1", "call_2"):
        ttl = await link.client.ttl(f"{prefix}thinking:{call_id}")
        assert 0 < ttl <= TTL_SECONDS


async def test_loading_no_ids_finds_nothing_and_is_no_failure(link: RedisLink, prefix: str) -> None:
    # Like the memory store; and no store error (the link fixture checks), which would
    # fail every call, limits included, for a second.
    assert await RedisThinkingStore(link, prefix).load([]) is None


async def test_thinking_ttl_is_the_one_given(link: RedisLink, prefix: str) -> None:
    await RedisThinkingStore(link, prefix, ttl=50).save(["call_1"], BLOCKS)
    assert 0 < await link.client.ttl(f"{prefix}thinking:call_1") <= 50


async def test_thinking_load_returns_the_first_found(link: RedisLink, prefix: str) -> None:
    store = RedisThinkingStore(link, prefix)
    await store.save(["a"], BLOCKS)
    await store.save(["b"], OTHER_BLOCKS)
    assert await store.load(["missing", "b", "a"]) == OTHER_BLOCKS
    assert await store.load(["a", "b"]) == BLOCKS


async def test_thinking_is_scoped_per_key(link: RedisLink, prefix: str) -> None:
    shared = RedisThinkingStore(link, prefix)
    alice, bob = ScopedThinkingStore(shared, "alice"), ScopedThinkingStore(shared, "bob")
    await alice.save(["call_1"], BLOCKS)
    assert await alice.load(["call_1"]) == BLOCKS
    assert await bob.load(["call_1"]) is None
    assert await shared.load(["call_1"]) is None
    await bob.save(["call_1"], OTHER_BLOCKS)
    assert await alice.load(["call_1"]) == BLOCKS
    assert await bob.load(["call_1"]) == OTHER_BLOCKS
    # Another replica, another link, the same Redis: alice's blocks are found there too.
    other = ScopedThinkingStore(RedisThinkingStore(link, prefix), "alice")
    assert await other.load(["call_1"]) == BLOCKS


async def test_thinking_with_the_store_down_is_lost_quietly(
    private_redis: RedisServer, anyio_backend: str
) -> None:
    errors: list[str] = []
    link = RedisLink(private_redis.url, TIMEOUT, errors.append)
    store = RedisThinkingStore(link, "t:")
    try:
        private_redis.stop()
        await store.save(["call_1"], BLOCKS)
        assert await store.load(["call_1"]) is None
        assert errors == ["thinking", "thinking"]
    finally:
        await link.aclose()


# -- cooldowns ------------------------------------------------------------------------------

CONFIG = parse_config(
    {
        "providers": {"a": {"kind": "openai"}, "b": {"kind": "openai"}},
        "models": [
            {
                "name": "spread",
                "deployments": [{"provider": "a", "model": "m"}, {"provider": "b", "model": "m"}],
            },
            {"name": "solo", "provider": "a", "model": "m"},
        ],
    },
    "c.yaml",
    {},
)
ROUTER = Router(CONFIG)


async def test_cooldowns_round_trip_and_expire(link: RedisLink, prefix: str) -> None:
    shared = RedisCooldowns(link, prefix)
    now = time.time()
    await shared.publish("spread#0:a/m", now + 30, now)
    assert await shared.fetch(["spread#0:a/m", "spread#1:b/m"]) == {"spread#0:a/m": now + 30}
    assert 29_000 < await link.client.pttl(f"{prefix}cooldown:spread#0:a/m") <= 30_000
    assert await shared.fetch(["unknown"]) == {}
    # Already over (or nearly): still a valid expiry (at least 1 ms), never a store error,
    # which the link fixture would see.
    await shared.publish("short", now + 0.0001, now)
    await shared.publish("past", now - 5, now)
    for name in ("short", "past"):
        assert await link.client.pttl(f"{prefix}cooldown:{name}") in (-2, 0, 1)


async def test_cooldowns_with_the_store_down_are_best_effort(
    private_redis: RedisServer, anyio_backend: str
) -> None:
    errors: list[str] = []
    link = RedisLink(private_redis.url, TIMEOUT, errors.append)
    shared = RedisCooldowns(link, "t:")
    try:
        private_redis.stop()
        now = time.time()
        await shared.publish("spread#0:a/m", now + 30, now)
        assert await shared.fetch(["spread#0:a/m"]) == {}
        assert errors == ["cooldown", "cooldown"]
    finally:
        await link.aclose()


async def test_a_replica_takes_in_another_replicas_cooldown(link: RedisLink, prefix: str) -> None:
    shared = RedisCooldowns(link, prefix)
    route = ROUTER.resolve("spread")
    first, second = (d.key for d in route.deployments)
    replica_a, replica_b = Cooldowns(CONFIG.router.cooldown), Cooldowns(CONFIG.router.cooldown)
    now = time.time()
    until = replica_a.failed(first, now, rate_limited=True, retry_after=40)
    assert until == now + 40
    await shared.publish(first, until, now)
    assert replica_b.cooling_until(first, now) == 0.0
    await replica_b.share(route, shared, now)
    assert replica_b.cooling_until(first, now) == until > now
    assert replica_b.cooling_until(second, now) == 0.0
    assert replica_b.cooling_until(first, until + 0.001) == 0.0, "and it ends"


class CountingCooldowns:
    def __init__(self, found: dict[str, float] | None = None) -> None:
        self.fetched: list[list[str]] = []
        self.found = found or {}

    async def publish(self, deployment: str, until: float, now: float) -> None:
        raise AssertionError("share only reads")

    async def fetch(self, deployments: Sequence[str]) -> dict[str, float]:
        self.fetched.append(list(deployments))
        return dict(self.found)


async def test_share_reads_at_most_once_a_second_per_route(anyio_backend: str) -> None:
    shared = CountingCooldowns()
    cooldowns = Cooldowns(CooldownConfig())
    spread, solo = ROUTER.resolve("spread"), ROUTER.resolve("solo")
    now = 10_000.0
    for offset in (0.0, 0.2, 0.99):
        await cooldowns.share(spread, shared, now + offset)
    assert shared.fetched == [[d.key for d in spread.deployments]]
    await cooldowns.share(solo, shared, now + 0.5)  # another route has its own second
    assert len(shared.fetched) == 2
    await cooldowns.share(spread, shared, now + 1.01)
    await cooldowns.share(spread, shared, now + 1.5)
    assert len(shared.fetched) == 3
    await cooldowns.share(spread, shared, now + 2.2)
    assert len(shared.fetched) == 4


async def test_share_ignores_what_has_ended_and_keeps_the_longer(anyio_backend: str) -> None:
    route = ROUTER.resolve("spread")
    first, second = (d.key for d in route.deployments)
    now = 10_000.0
    cooldowns = Cooldowns(CooldownConfig(seconds=30))
    own = cooldowns.failed(first, now, rate_limited=True)
    assert own == now + 30
    await cooldowns.share(route, CountingCooldowns({first: now + 5, second: now - 1}), now)
    assert cooldowns.cooling_until(first, now) == own, "a shorter shared cooldown changes nothing"
    assert cooldowns.cooling_until(second, now) == 0.0, "an ended one is not taken in"
    await cooldowns.share(route, CountingCooldowns({first: now + 60}), now + 2)
    assert cooldowns.cooling_until(first, now + 2) == now + 60
