"""Request, token and concurrency limits: one suite run against both stores (the in-memory
one, with a clock driven by hand, and Redis' Lua scripts, against a real redis-server), the
window sliding (memory only: Redis' clock cannot be moved), the Redis keys' expiry, and
Admission, which turns a refusal into the client's 429 (or 503 when the store is down)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pytest

from app.errors import RateLimited, StoreUnavailable
from app.ops.admission import Admission, Lease
from app.ops.keys import ClientKey
from app.ops.limits import WINDOW, MemoryLimiter, Refusal, Rule, StoreDown
from app.ops.redis_limits import LEASE_SECONDS, RedisLimiter
from app.ops.redis_link import RedisLink
from app.server_config import KeyConfig, Limits, ServerConfig, StoreConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self, now: float = 1_000_000.25) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Store:
    kind: str
    limiter: MemoryLimiter | RedisLimiter
    errors: list[str] = field(default_factory=list)
    link: RedisLink | None = None
    prefix: str = ""
    url: str = ""


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, anyio_backend: str) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield Store("memory", MemoryLimiter(Clock()))
        return
    url: str = request.getfixturevalue("redis_url")
    errors: list[str] = []
    link = RedisLink(url, 0.5, on_error=errors.append)
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    try:
        yield Store("redis", RedisLimiter(link, prefix), errors, link, prefix, url)
    finally:
        await link.aclose()
    assert errors == [], "the store must not have failed during the test"


def lease() -> str:
    return uuid.uuid4().hex


async def admit_n(store: Store, rules: Sequence[Rule], n: int) -> list[Refusal | None]:
    return [await store.limiter.admit(rules, lease()) for _ in range(n)]


# -- both stores ----------------------------------------------------------------------------


@pytest.mark.parametrize("rpm", [1, 3])
async def test_rpm_admits_exactly_n_then_refuses(store: Store, rpm: int) -> None:
    rule = Rule("key:alice", Limits(rpm=rpm))
    assert await admit_n(store, [rule], rpm) == [None] * rpm
    refusal = await store.limiter.admit([rule], lease())
    assert refusal is not None
    assert (refusal.rule, refusal.limit) == (rule, "rpm")
    assert isinstance(refusal.retry_after, int)
    assert 1 <= refusal.retry_after <= WINDOW
    again = await store.limiter.admit([rule], lease())
    assert again is not None, "a refusal frees no place"
    assert again.limit == "rpm"


async def test_a_refused_request_is_counted_against_no_rule(store: Store) -> None:
    a = Rule("key:alice", Limits(rpm=2, concurrent=1))
    b = Rule("model:claude", Limits(rpm=1))
    assert await store.limiter.admit([b], lease()) is None  # b is now full
    refusal = await store.limiter.admit([a, b], lease())
    assert refusal is not None
    assert refusal.rule == b
    assert refusal.limit == "rpm"
    # a counted nothing: neither a request nor a concurrent place.
    first = lease()
    assert await store.limiter.admit([a], first) is None, "a's only place was not taken"
    await store.limiter.settle([a], first, [], 0)
    assert await store.limiter.admit([a], lease()) is None, "a's rpm was not charged"
    refusal = await store.limiter.admit([a], lease())
    assert refusal is not None
    assert refusal.rule == a
    assert refusal.limit == "rpm"


async def test_the_first_refusing_rule_is_reported(store: Store) -> None:
    full = Rule("model:full", Limits(rpm=1))
    also_full = Rule("model:also", Limits(tpm=1))
    await store.limiter.admit([full], lease())
    held = lease()
    await store.limiter.admit([also_full], held)
    await store.limiter.settle([also_full], held, [also_full], 5)
    refusal = await store.limiter.admit([also_full, full], lease())
    assert refusal is not None
    assert (refusal.rule, refusal.limit) == (also_full, "tpm")


@pytest.mark.parametrize("concurrent", [1, 2])
async def test_concurrent_holds_places_until_settled(store: Store, concurrent: int) -> None:
    rule = Rule("key:alice", Limits(concurrent=concurrent))
    leases = [lease() for _ in range(concurrent)]
    for held in leases:
        assert await store.limiter.admit([rule], held) is None
    refusal = await store.limiter.admit([rule], lease())
    assert refusal is not None
    assert (refusal.rule, refusal.limit, refusal.retry_after) == (rule, "concurrent", 1)
    await store.limiter.settle([rule], leases[0], [rule], 0)
    newcomer = lease()
    assert await store.limiter.admit([rule], newcomer) is None, "settle freed a place"
    refusal = await store.limiter.admit([rule], lease())
    assert refusal is not None
    assert refusal.limit == "concurrent"


async def test_settling_an_unknown_lease_frees_nothing(store: Store) -> None:
    rule = Rule("key:alice", Limits(concurrent=1))
    assert await store.limiter.admit([rule], lease()) is None
    await store.limiter.settle([rule], lease(), [rule], 0)
    refusal = await store.limiter.admit([rule], lease())
    assert refusal is not None
    assert refusal.limit == "concurrent"


async def test_tpm_counts_settled_tokens_of_charged_rules_only(store: Store) -> None:
    key = Rule("key:alice", Limits(tpm=100))
    asked = Rule("model:claude", Limits(tpm=100))
    answered = Rule("model:fallback", Limits(tpm=100))
    rules = [key, asked, answered]
    held = lease()
    assert await store.limiter.admit(rules, held) is None
    await store.limiter.settle(rules, held, [key, answered], 99)
    # Under the limit (99 < 100): still admitted.
    for rule in rules:
        assert await store.limiter.admit([rule], lease()) is None
    held = lease()
    await store.limiter.admit(rules, held)
    await store.limiter.settle(rules, held, [key, answered], 1)
    for rule in (key, answered):
        refusal = await store.limiter.admit([rule], lease())
        assert refusal is not None
        assert (refusal.rule, refusal.limit) == (rule, "tpm")
        assert 1 <= refusal.retry_after <= WINDOW
    assert await store.limiter.admit([asked], lease()) is None, "not charged: no tokens"


async def test_tokens_over_the_limit_in_one_answer_refuse_the_next(store: Store) -> None:
    rule = Rule("key:alice", Limits(tpm=10))
    held = lease()
    assert await store.limiter.admit([rule], held) is None
    await store.limiter.settle([rule], held, [rule], 1000)
    refusal = await store.limiter.admit([rule], lease())
    assert refusal is not None
    assert refusal.limit == "tpm"


async def test_a_settle_without_tokens_changes_nothing(store: Store) -> None:
    rule = Rule("key:alice", Limits(tpm=1))
    for _ in range(3):
        held = lease()
        assert await store.limiter.admit([rule], held) is None
        await store.limiter.settle([rule], held, [rule], 0)


async def test_a_rule_without_tpm_is_not_charged(store: Store) -> None:
    rule = Rule("key:alice", Limits(rpm=100))
    held = lease()
    await store.limiter.admit([rule], held)
    await store.limiter.settle([rule], held, [rule], 10_000)
    assert await store.limiter.admit([rule], lease()) is None


async def test_scopes_do_not_interfere(store: Store) -> None:
    limits = Limits(rpm=1, tpm=10, concurrent=1)
    alice, bob = Rule("key:alice", limits), Rule("key:bob", limits)
    held = lease()
    assert await store.limiter.admit([alice], held) is None
    await store.limiter.settle([alice], held, [alice], 50)
    refusal = await store.limiter.admit([alice], lease())
    assert refusal is not None
    assert refusal.rule == alice
    assert await store.limiter.admit([bob], lease()) is None
    # The same name under another kind of scope is another counter too.
    assert await store.limiter.admit([Rule("model:alice", limits)], lease()) is None


async def test_no_limits_means_always_admitted(store: Store) -> None:
    rule = Rule("key:alice", Limits())
    assert await admit_n(store, [rule], 5) == [None] * 5
    assert await store.limiter.admit([], lease()) is None


# -- Redis: nothing lives forever -----------------------------------------------------------


@pytest.fixture
def redis_store(store: Store) -> Store:
    if store.kind != "redis":
        pytest.skip("Redis only")
    return store


@pytest.mark.parametrize("store", ["redis"], indirect=True)
async def test_redis_counters_expire_with_their_window(redis_store: Store) -> None:
    store, link = redis_store, redis_store.link
    assert link is not None
    rule = Rule("key:alice", Limits(rpm=5, tpm=100, concurrent=2))
    held = lease()
    assert await store.limiter.admit([rule], held) is None
    await store.limiter.settle([rule], held, [rule], 10)
    await store.limiter.admit([rule], lease())  # holds a place for good
    base = f"{store.prefix}limit:key:alice:"
    for suffix in ("rpm", "tpm"):
        ttl = await link.client.ttl(base + suffix)
        assert 0 < ttl <= WINDOW + 1, suffix
    ttl = await link.client.ttl(base + "concurrent")
    assert 0 < ttl <= LEASE_SECONDS + 1
    keys = sorted(
        k.decode() for k in await link.client.keys(f"{store.prefix}*") if isinstance(k, bytes)
    )
    assert keys == [base + "concurrent", base + "rpm", base + "tpm"]


@pytest.mark.parametrize("store", ["redis"], indirect=True)
async def test_redis_lapsed_leases_free_their_places(redis_store: Store) -> None:
    store, link = redis_store, redis_store.link
    assert link is not None
    rule = Rule("key:alice", Limits(concurrent=1))
    assert await store.limiter.admit([rule], "dead-instance") is None
    assert await store.limiter.admit([rule], lease()) is not None
    # An instance died holding the place: its lease's score is when it lapses. Make it past.
    await link.client.zadd(f"{store.prefix}limit:key:alice:concurrent", {"dead-instance": 1})
    assert await store.limiter.admit([rule], lease()) is None


@pytest.mark.parametrize("store", ["redis"], indirect=True)
async def test_redis_replicas_share_their_counts(redis_store: Store) -> None:
    errors: list[str] = []
    other_link = RedisLink(redis_store.url, 0.5, errors.append)  # another replica's
    try:
        replicas = [redis_store.limiter, RedisLimiter(other_link, redis_store.prefix)]
        rpm = Rule("key:alice", Limits(rpm=3))
        assert [await replicas[i % 2].admit([rpm], lease()) for i in range(3)] == [None] * 3
        assert await replicas[1].admit([rpm], lease()) is not None
        assert await replicas[0].admit([rpm], lease()) is not None
        one = Rule("key:bob", Limits(concurrent=1, tpm=10))
        held = lease()
        assert await replicas[0].admit([one], held) is None
        assert await replicas[1].admit([one], lease()) is not None
        await replicas[0].settle([one], held, [one], 10)
        refusal = await replicas[1].admit([one], lease())
        assert refusal is not None
        assert refusal.limit == "tpm"
        # Another prefix (another deployment sharing the Redis) counts apart.
        assert await RedisLimiter(other_link, "elsewhere:").admit([rpm], lease()) is None
    finally:
        await other_link.aclose()
    assert errors == []


# -- memory: the window slides with the clock -----------------------------------------------


def memory() -> tuple[MemoryLimiter, Clock]:
    clock = Clock(1_000_000.0)
    return MemoryLimiter(clock), clock


async def test_rpm_is_free_again_once_the_window_has_passed(anyio_backend: str) -> None:
    limiter, clock = memory()
    rule = Rule("key:alice", Limits(rpm=2))
    assert await limiter.admit([rule], lease()) is None
    assert await limiter.admit([rule], lease()) is None
    refusal = await limiter.admit([rule], lease())
    assert refusal is not None
    assert refusal.retry_after == WINDOW
    clock.now += WINDOW + 1
    assert await limiter.admit([rule], lease()) is None
    assert await limiter.admit([rule], lease()) is None
    assert await limiter.admit([rule], lease()) is not None


async def test_retry_after_counts_down_and_is_honest(anyio_backend: str) -> None:
    limiter, clock = memory()
    start = clock.now
    rule = Rule("key:alice", Limits(rpm=2))
    await limiter.admit([rule], lease())  # at start
    clock.now = start + 20.5
    await limiter.admit([rule], lease())  # 20 s later
    waits = []
    for elapsed in (21.0, 30.0, 45.5, 59.0):
        clock.now = start + elapsed
        refusal = await limiter.admit([rule], lease())
        assert refusal is not None
        waits.append(refusal.retry_after)
    assert waits == [39, 30, 15, 1]
    # Waiting exactly retry_after is enough: the oldest request has left the window.
    clock.now = start + 59.0 + waits[-1]
    assert await limiter.admit([rule], lease()) is None
    refusal = await limiter.admit([rule], lease())
    assert refusal is not None, "the request at 20.5 s and the new one fill the window"
    assert refusal.retry_after == 20, "the request at 20.5 s is in the bucket of second 20"
    clock.now = start + 80.0
    assert await limiter.admit([rule], lease()) is None


async def test_retry_after_waits_for_enough_of_the_window_to_leave(anyio_backend: str) -> None:
    limiter, clock = memory()
    start = clock.now
    rule = Rule("key:alice", Limits(tpm=100))
    for elapsed, tokens in ((0.0, 60), (10.0, 30), (20.0, 50)):
        clock.now = start + elapsed
        held = lease()
        assert await limiter.admit([rule], held) is None or elapsed == 20.0
        await limiter.settle([rule], held, [rule], tokens)
    clock.now = start + 25.0
    refusal = await limiter.admit([rule], lease())
    # 140 in the window; 80 once the 60 at 0 s leave (at 60 s), which is below 100.
    assert refusal is not None
    assert (refusal.limit, refusal.retry_after) == ("tpm", 35)
    clock.now = start + 60.0
    assert await limiter.admit([rule], lease()) is None


async def test_tokens_leave_the_window_too(anyio_backend: str) -> None:
    limiter, clock = memory()
    rule = Rule("key:alice", Limits(tpm=10))
    held = lease()
    await limiter.admit([rule], held)
    await limiter.settle([rule], held, [rule], 10)
    assert await limiter.admit([rule], lease()) is not None
    clock.now += WINDOW
    assert await limiter.admit([rule], lease()) is None


async def test_concurrent_places_do_not_lapse_with_the_window(anyio_backend: str) -> None:
    limiter, clock = memory()
    rule = Rule("key:alice", Limits(concurrent=1))
    held = lease()
    await limiter.admit([rule], held)
    clock.now += 10 * WINDOW
    assert await limiter.admit([rule], lease()) is not None
    await limiter.settle([rule], held, [], 0)
    assert await limiter.admit([rule], lease()) is None


async def test_memory_state_stays_bounded(anyio_backend: str) -> None:
    limiter, clock = memory()
    rule = Rule("key:alice", Limits(rpm=1_000_000))
    for _ in range(500):
        clock.now += 0.5
        assert await limiter.admit([rule], lease()) is None
    window = limiter._requests["key:alice"]
    assert len(window.buckets) <= WINDOW
    assert window.total == sum(amount for _, amount in window.buckets)


# -- Admission ------------------------------------------------------------------------------

SERVER = ServerConfig(
    keys=[
        KeyConfig(name="alice", key="sk-alice", limits=Limits(rpm=2, tpm=100, concurrent=5)),
        KeyConfig(name="bob", key="sk-bob"),
        KeyConfig(name="carol", key="sk-carol", limits=Limits(concurrent=1)),
    ],
    limits={
        "claude": Limits(rpm=3, tpm=100),
        "other": Limits(tpm=100),
        "unlimited": Limits(),
    },
)
ALICE = ClientKey("alice", limits=SERVER.keys[0].limits)
BOB = ClientKey("bob")
CAROL = ClientKey("carol", limits=SERVER.keys[2].limits)


@dataclass
class Refused:
    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def __call__(self, model: str, key: str, limit: str) -> None:
        self.calls.append((model, key, limit))


def admission(server: ServerConfig = SERVER) -> tuple[Admission, Refused, Clock]:
    refused, clock = Refused(), Clock()
    return Admission(MemoryLimiter(clock), server, refused), refused, clock


@pytest.mark.parametrize(
    ("key", "model", "admitted", "limit", "type_", "named"),
    [
        (ALICE, "unlimited", 2, "rpm", "requests", ["the key 'alice' (requests per minute: 2)"]),
        (BOB, "claude", 3, "rpm", "requests", ["the model 'claude' (requests per minute: 3)"]),
        (
            CAROL,
            "unlimited",
            1,
            "concurrent",
            "requests",
            ["the key 'carol' (requests at once: 1)"],
        ),
    ],
)
async def test_a_refusal_is_a_429_in_the_client_shape(
    key: ClientKey,
    model: str,
    admitted: int,
    limit: str,
    type_: str,
    named: list[str],
) -> None:
    gate, refused, _ = admission()
    for _ in range(admitted):
        assert await gate.admit(None, key, model) is not None
    with pytest.raises(RateLimited) as caught:
        await gate.admit(None, key, model)
    error = caught.value
    assert (error.status, error.type, error.code) == (429, type_, "rate_limit_exceeded")
    retry_after = error.headers["retry-after"]
    assert retry_after.isdigit()
    assert 1 <= int(retry_after) <= WINDOW
    for words in named:
        assert words in error.message
    assert f"Try again in {retry_after} s." in error.message
    assert "sk-" not in error.message
    assert refused.calls == [(model, key.name, limit)]
    assert error.body()["error"]["code"] == "rate_limit_exceeded"


async def test_a_token_refusal_has_type_tokens(anyio_backend: str) -> None:
    gate, refused, _ = admission()
    lease_ = await gate.admit(None, BOB, "other")
    assert lease_ is not None
    await gate.settle(lease_, BOB, "other", 100)
    with pytest.raises(RateLimited) as caught:
        await gate.admit(None, BOB, "other")
    error = caught.value
    assert (error.status, error.type, error.code) == (429, "tokens", "rate_limit_exceeded")
    assert "the model 'other' (tokens per minute: 100)" in error.message
    assert error.headers["retry-after"].isdigit()
    assert refused.calls == [("other", "bob", "tpm")]


async def test_no_rule_means_no_lease(anyio_backend: str) -> None:
    gate, refused, _ = admission()
    assert await gate.admit(None, BOB, "unlimited") is None
    assert await gate.admit(None, BOB, "not-limited") is None
    assert await gate.admit(None, ClientKey("default"), "unlimited") is None
    held = Lease()
    assert await gate.admit(held, BOB, "unlimited") is held
    assert refused.calls == []


async def test_a_lease_holds_the_key_and_model_rules(anyio_backend: str) -> None:
    gate, _, _ = admission()
    held = await gate.admit(None, ALICE, "claude")
    assert held is not None
    assert [rule.scope for rule in held.rules] == ["key:alice", "model:claude"]


async def test_a_fallback_adds_only_the_model_rule(anyio_backend: str) -> None:
    gate, _, _ = admission()
    held = await gate.admit(None, ALICE, "unlimited")
    assert held is not None
    assert [r.scope for r in held.rules] == ["key:alice"]
    again = await gate.admit(held, ALICE, "claude")
    assert again is held
    assert [rule.scope for rule in held.rules] == ["key:alice", "model:claude"]
    # The fallback did not count a second request against alice (rpm 2): one more fits.
    assert await gate.admit(None, ALICE, "unlimited") is not None
    with pytest.raises(RateLimited):
        await gate.admit(None, ALICE, "unlimited")


async def test_a_refused_fallback_leaves_the_lease_as_it_was(anyio_backend: str) -> None:
    gate, refused, _ = admission()
    for _ in range(3):
        await gate.admit(None, BOB, "claude")
    held = await gate.admit(None, ALICE, "unlimited")
    assert held is not None
    with pytest.raises(RateLimited):
        await gate.admit(held, ALICE, "claude")
    assert [rule.scope for rule in held.rules] == ["key:alice"]
    assert refused.calls == [("claude", "alice", "rpm")]


async def test_settle_charges_the_key_and_the_model_that_answered(anyio_backend: str) -> None:
    gate, _, _ = admission()
    held = await gate.admit(None, ALICE, "claude")
    assert held is not None
    await gate.admit(held, ALICE, "other")  # claude failed; other answered
    await gate.settle(held, ALICE, "other", 100)
    with pytest.raises(RateLimited) as caught:
        await gate.admit(None, ALICE, "unlimited")
    assert caught.value.type == "tokens"
    assert "the key 'alice'" in caught.value.message
    with pytest.raises(RateLimited) as caught:
        await gate.admit(None, BOB, "other")
    assert caught.value.type == "tokens"
    assert "the model 'other'" in caught.value.message
    assert await gate.admit(None, BOB, "claude") is not None, "claude did not answer"


async def test_settle_without_an_answer_charges_only_the_key(anyio_backend: str) -> None:
    gate, _, _ = admission()
    held = await gate.admit(None, ALICE, "claude")
    assert held is not None
    await gate.settle(held, ALICE, None, 100)
    assert await gate.admit(None, BOB, "claude") is not None
    with pytest.raises(RateLimited):
        await gate.admit(None, ALICE, "unlimited")


async def test_settle_frees_the_concurrent_place(anyio_backend: str) -> None:
    gate, _, _ = admission()
    held = await gate.admit(None, CAROL, "claude")
    assert held is not None
    with pytest.raises(RateLimited):
        await gate.admit(None, CAROL, "unlimited")
    await gate.settle(held, CAROL, "claude", 0)
    assert await gate.admit(None, CAROL, "unlimited") is not None


class DownLimiter:
    """A store that cannot be reached."""

    def __init__(self) -> None:
        self.settled = 0

    async def admit(self, rules: Sequence[Rule], lease: str) -> Refusal | None:
        raise StoreDown("admit")

    async def settle(
        self, rules: Sequence[Rule], lease: str, charged: Sequence[Rule], tokens: int
    ) -> None:
        self.settled += 1
        raise StoreDown("settle")


def down(on_error: Literal["open", "closed"]) -> tuple[Admission, Refused, DownLimiter]:
    server = SERVER.model_copy(update={"store": StoreConfig(on_error=on_error)})
    refused, limiter = Refused(), DownLimiter()
    return Admission(limiter, server, refused), refused, limiter


@pytest.mark.parametrize("held", [None, Lease()])
async def test_store_down_and_open_serves_the_request(
    anyio_backend: str, held: Lease | None
) -> None:
    gate, refused, _ = down("open")
    assert not gate.closed
    assert await gate.admit(held, ALICE, "claude") is held
    assert refused.calls == []


async def test_store_down_and_closed_refuses_with_503(anyio_backend: str) -> None:
    gate, refused, _ = down("closed")
    assert gate.closed
    with pytest.raises(StoreUnavailable) as caught:
        await gate.admit(None, ALICE, "claude")
    error = caught.value
    assert (error.status, error.code) == (503, "store_unavailable")
    assert refused.calls == [("claude", "alice", "store")]


async def test_store_down_and_closed_still_serves_what_no_rule_limits(
    anyio_backend: str,
) -> None:
    gate, refused, _ = down("closed")
    assert await gate.admit(None, BOB, "unlimited") is None
    assert refused.calls == []


@pytest.mark.parametrize("on_error", ["open", "closed"])
async def test_settle_survives_a_store_that_is_down(
    anyio_backend: str, on_error: Literal["open", "closed"]
) -> None:
    gate, _, limiter = down(on_error)
    held = Lease(rules=[Rule("key:alice", ALICE.limits)])
    await gate.settle(held, ALICE, "claude", 10)
    assert limiter.settled == 1
