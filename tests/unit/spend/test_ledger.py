"""The budgets' ledger, one suite against both stores (memory with a hand-driven clock, and
Redis' Lua scripts against a real redis-server): all-or-none reservations, limits held to the
nano-dollar, settling to what was spent, reservations that expire exactly, periods kept apart,
and the key's all-time total."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
import redis

from app.ops.redis_link import RedisLink
from app.spend.ledger import (
    COMPACT_SLACK,
    MAX_NANO,
    NANO,
    Budget,
    Exceeded,
    MemoryLedger,
    RedisLedger,
    Reservation,
    to_nano,
)
from app.spend_config import MAX_BUDGET

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 11, 27, 22, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Store:
    kind: str
    ledger: MemoryLedger | RedisLedger
    clock: Clock
    errors: list[str] = field(default_factory=list)
    url: str = ""
    prefix: str = ""

    async def pass_time(self, seconds: float) -> None:
        """Memory: the clock moves. Redis: expiry runs on Redis' own clock, so we wait."""
        if self.kind == "memory":
            self.clock.now += seconds
        else:
            await asyncio.sleep(seconds)


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, anyio_backend: str) -> AsyncIterator[Store]:
    clock = Clock()
    if request.param == "memory":
        yield Store("memory", MemoryLedger(clock), clock)
        return
    url: str = request.getfixturevalue("redis_url")
    errors: list[str] = []
    link = RedisLink(url, 0.5, on_error=errors.append)
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    try:
        yield Store("redis", RedisLedger(link, prefix, clock), clock, errors, url, prefix)
    finally:
        await link.aclose()
    assert errors == []


KEY = Budget("key", "alice", 1.0, "month")
TEAM = Budget("team", "research", 10.0, "week")
MODEL = Budget("model", "claude", 0.5, "day")
TTL = 60.0


def rid() -> str:
    return uuid.uuid4().hex


async def reserve(store: Store, usd: float, *budgets: Budget) -> Reservation | Exceeded:
    return await store.ledger.reserve(usd, budgets, rid(), TTL, key="alice")


async def test_admits_exactly_what_the_limit_holds(store: Store) -> None:
    # 0.1 does not add up to 1.0 in floats; nano-dollars do: ten fit, the eleventh does not.
    results = [await reserve(store, 0.1, KEY) for _ in range(11)]
    assert all(isinstance(r, Reservation) for r in results[:10])
    refused = results[10]
    assert isinstance(refused, Exceeded)
    assert refused.budget == KEY
    assert refused.resets_at == datetime(2026, 12, 1, tzinfo=UTC)
    assert await store.ledger.usage([KEY]) == [(0, 1_000_000_000)]


async def test_all_or_none(store: Store) -> None:
    assert isinstance(await reserve(store, 0.4, KEY, TEAM, MODEL), Reservation)
    refused = await reserve(store, 0.2, KEY, TEAM, MODEL)  # the model's 0.5 cannot hold it
    assert isinstance(refused, Exceeded)
    assert refused.budget == MODEL
    assert refused.resets_at == datetime(2026, 11, 28, tzinfo=UTC)
    assert refused.retry_after(datetime(2026, 11, 27, 22, 0, tzinfo=UTC)) == 7200
    # Nothing of the refused one was reserved anywhere.
    assert await store.ledger.usage([KEY, TEAM, MODEL]) == [(0, 400_000_000)] * 3


async def test_settle_replaces_the_reservation_by_the_cost(store: Store) -> None:
    held = await reserve(store, 0.4, KEY, TEAM)
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.123456789)
    assert await store.ledger.usage([KEY, TEAM]) == [(123_456_789, 0)] * 2
    assert await store.ledger.key_total("alice") == 123_456_789
    # Settling twice does not release anything twice.
    await store.ledger.settle(held, 0)
    assert await store.ledger.usage([KEY]) == [(123_456_789, 0)]


async def test_settle_charges_only_the_budgets_named(store: Store) -> None:
    held = await reserve(store, 0.3, KEY, MODEL)
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.25, charged={KEY})
    assert await store.ledger.usage([KEY, MODEL]) == [(250_000_000, 0), (0, 0)]


async def test_spent_counts_against_the_limit(store: Store) -> None:
    held = await reserve(store, 1.0, KEY)
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.75)
    assert isinstance(await reserve(store, 0.25, KEY), Reservation)
    assert isinstance(await reserve(store, 0.000000001, KEY), Exceeded)


async def test_a_reservation_expires_exactly(store: Store) -> None:
    ttl = 0.4
    held = await store.ledger.reserve(1.0, [KEY], rid(), ttl)
    assert isinstance(held, Reservation)
    assert isinstance(await reserve(store, 0.1, KEY), Exceeded)
    await store.pass_time(ttl + 0.05)
    assert await store.ledger.usage([KEY]) == [(0, 0)]
    assert isinstance(await reserve(store, 1.0, KEY), Reservation)
    # Its late settle still counts what it spent, and releases nothing more.
    await store.ledger.settle(held, 0.5)
    assert await store.ledger.usage([KEY]) == [(500_000_000, 1_000_000_000)]


async def test_a_reservation_lives_until_its_expiry(store: Store) -> None:
    held = await store.ledger.reserve(1.0, [KEY], rid(), 5)
    assert isinstance(held, Reservation)
    await store.pass_time(0.3)
    assert await store.ledger.usage([KEY]) == [(0, 1_000_000_000)]


async def test_a_new_period_starts_at_zero(store: Store) -> None:
    held = await reserve(store, 0.5, MODEL)
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.5)
    assert isinstance(await reserve(store, 0.1, MODEL), Exceeded)
    store.clock.now = datetime(2026, 11, 28, 0, 0, tzinfo=UTC).timestamp()
    assert await store.ledger.usage([MODEL]) == [(0, 0)]
    assert isinstance(await reserve(store, 0.5, MODEL), Reservation)
    # The old period's reservation settles into the old period.
    await store.ledger.settle(held, 0.5)
    assert await store.ledger.usage([MODEL]) == [(0, 500_000_000)]


async def test_a_total_budget_never_resets(store: Store) -> None:
    total = Budget("key", "alice", 0.2, "total")
    held = await reserve(store, 0.2, total)
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.2)
    store.clock.now += 400 * 86400
    refused = await reserve(store, 0.01, total)
    assert isinstance(refused, Exceeded)
    assert refused.resets_at is None
    assert refused.retry_after(datetime(2026, 1, 1, tzinfo=UTC)) is None


async def test_no_budgets(store: Store) -> None:
    assert await store.ledger.usage([]) == []
    assert await store.ledger.key_total("nobody") == 0


async def test_redis_keys_expire_after_their_period(store: Store) -> None:
    if store.kind != "redis":
        pytest.skip("Redis keys only")
    held = await reserve(store, 0.1, MODEL, Budget("key", "alice", 1.0, "total"))
    assert isinstance(held, Reservation)
    await store.ledger.settle(held, 0.1)
    client = redis.Redis.from_url(store.url)
    day = f"{store.prefix}spend:model:claude:2026-11-27"
    # From the day's start to the reset (a day), plus the TTL, plus a day's grace.
    assert 86400 + 60 + 86400 - 5 <= client.ttl(day) <= 86400 + 60 + 86400
    assert not client.exists(day + ":expiry")  # settled: no reservation left
    assert client.ttl(f"{store.prefix}spend:key:alice:total") == -1
    assert client.get(f"{store.prefix}spend:total:alice") == b"100000000"
    client.close()


async def test_concurrent_reservations_never_pass_the_limit(store: Store) -> None:
    budget = Budget("team", "research", 0.7, "day")
    results = await asyncio.gather(*(reserve(store, 0.1, budget) for _ in range(20)))
    assert sum(isinstance(r, Reservation) for r in results) == 7
    assert await store.ledger.usage([budget]) == [(0, 700_000_000)]


def test_to_nano_rounds_and_saturates_rather_than_raising() -> None:
    assert to_nano(0.1) == 100_000_000
    assert to_nano(1.5e-9) == 2
    assert to_nano(MAX_BUDGET) == 10**18 < MAX_NANO
    for huge in (1e300, float("inf"), float("nan"), MAX_NANO / NANO):
        assert to_nano(huge) == MAX_NANO
    assert to_nano(float("-inf")) == -MAX_NANO
    assert Budget("key", "k", 1e300, "day").limit == MAX_NANO


async def test_settled_reservations_leave_o1_entries_in_memory() -> None:
    """N settled requests keep at most 2 x (held) + COMPACT_SLACK heap entries; the held ones
    survive each compaction and still expire."""
    clock = Clock()
    ledger = MemoryLedger(clock)
    budgets = [KEY, TEAM]
    held = [await ledger.reserve(0.01, budgets, rid(), TTL) for _ in range(10)]
    assert all(isinstance(one, Reservation) for one in held)
    for _ in range(5000):
        settled = await ledger.reserve(0.01, budgets, rid(), TTL, key="alice")
        assert isinstance(settled, Reservation)
        await ledger.settle(settled, 0.0)
    for counter in ledger._counters.values():
        assert len(counter.held) == 10
        assert len(counter.expiries) <= 2 * 10 + COMPACT_SLACK + 1
    assert await ledger.usage(budgets) == [(0, 10 * to_nano(0.01))] * 2
    clock.now += TTL
    assert await ledger.usage(budgets) == [(0, 0)] * 2
    assert all(not c.held and not c.expiries for c in ledger._counters.values())
