"""Budgets' counters: what each budget has spent in its current period and what requests in
flight have reserved against it, kept in memory (one process) or in Redis (every replica).

A request reserves its worst case against every budget that applies, all or none, before it
goes upstream (`reserve`); the reservation is replaced by what it spent when it ends
(`settle`). Checking and reserving are one step (one Lua script in Redis), so concurrent
requests on any replicas never together pass a limit. A reservation whose process died before
settling expires: the next call that touches its budget drops it.

Amounts are whole nano-dollars (1e-9 USD): integers add exactly in Python, in Redis' HINCRBY
and in Lua's doubles (up to 2**53, about nine million dollars), so `N` reservations of `x`
fit a limit of `N * x` exactly, never refused by a rounding error."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from app.spend.periods import Period, next_reset, period_tag, seconds_until, utc

if TYPE_CHECKING:
    from app.ops.redis_link import RedisLink

Scope = Literal["key", "team", "model"]
NANO = 1_000_000_000
GRACE_SECONDS = 86400
"""A past period's counters are kept this long after it ends (then expire in Redis)."""
DAY = 86400
COMPACT_SLACK = 64
"""Settled entries a memory counter's expiry heap may keep beyond twice its live ones."""
MAX_NANO = 2**62
"""Past every limit (MAX_BUDGET is 10^18), within Redis' 64-bit counters: refused, not raised."""


def to_nano(usd: float) -> int:
    """`usd` in whole nano-dollars, saturated at MAX_NANO (inf and NaN: MAX_NANO as well)."""
    nano = usd * NANO
    if -MAX_NANO < nano < MAX_NANO:
        return round(nano)
    return -MAX_NANO if nano < 0 else MAX_NANO


@dataclass(frozen=True, slots=True)
class Budget:
    scope: Scope
    name: str
    limit_usd: float
    period: Period
    limit: int = field(init=False, compare=False)
    """`limit_usd` in nano-dollars."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", to_nano(self.limit_usd))

    def describe(self) -> str:
        """Names the budget for a client: its scope and name (a key's name, never its secret)."""
        return f"the {self.scope} budget '{self.name}' ({self.limit_usd:g} USD per {self.period})"


@dataclass(frozen=True, slots=True)
class Slot:
    """One budget in one period: the counters a reservation went into. `keep`: seconds the
    period's counters are kept in Redis (0: for ever, `total`)."""

    budget: Budget
    name: str
    keep: int


@dataclass(frozen=True, slots=True)
class Reservation:
    id: str
    slots: tuple[Slot, ...]
    amount: int
    key: str | None = None
    """The client key whose all-time total `settle` adds to."""


@dataclass(frozen=True, slots=True)
class Exceeded:
    """`budget` cannot hold the request; `resets_at` None: a `total` budget never resets."""

    budget: Budget
    resets_at: datetime | None

    def retry_after(self, now: datetime) -> int | None:
        return None if self.resets_at is None else seconds_until(self.resets_at, now)


class Slots:
    """Each budget's slot for the current UTC day, computed once a day (a period never starts
    mid-day): naming the period costs a dict lookup per request, not date arithmetic. `keep`
    is counted from the day's start, so it is never short of the period's end."""

    __slots__ = ("_cache", "_day")

    def __init__(self) -> None:
        self._day = -1
        self._cache: dict[tuple[Budget, int], Slot] = {}

    def __call__(self, budgets: Sequence[Budget], now: float, ttl: float) -> tuple[Slot, ...]:
        day = int(now // DAY)
        if day != self._day:
            self._day = day
            self._cache.clear()
        seconds = math.ceil(ttl)
        cache = self._cache
        slots = []
        for budget in budgets:
            slot = cache.get((budget, seconds))
            if slot is None:
                slot = cache[budget, seconds] = _slot(budget, day * DAY, seconds)
            slots.append(slot)
        return tuple(slots)


def _slot(budget: Budget, day_start: float, ttl: int) -> Slot:
    moment = utc(day_start)
    reset = next_reset(budget.period, moment)
    keep = 0 if reset is None else seconds_until(reset, moment) + ttl + GRACE_SECONDS
    tag = period_tag(budget.period, moment)
    return Slot(budget, f"{budget.scope}:{budget.name}:{tag}", keep)


class Ledger(Protocol):
    clock: Callable[[], float]

    async def reserve(
        self,
        worst_case_usd: float,
        budgets: Sequence[Budget],
        reservation_id: str,
        ttl: float,
        key: str | None = None,
    ) -> Reservation | Exceeded:
        """Reserves the amount against every budget, or against none and says which one
        cannot hold it. Raises StoreDown when the store cannot answer."""
        ...

    async def settle(
        self, reservation: Reservation, actual_usd: float, charged: Container[Budget] | None = None
    ) -> None:
        """Replaces the reservation by `actual_usd` in the budgets it went into (only those in
        `charged` when given: the others are released), and adds it to its key's total."""
        ...

    async def usage(self, budgets: Sequence[Budget]) -> list[tuple[int, int]]:
        """(spent, reserved) of each budget in its current period, in nano-dollars."""
        ...

    async def key_total(self, key: str) -> int:
        """Everything settled for the key, in nano-dollars."""
        ...


@dataclass(slots=True)
class _Counter:
    spent: int = 0
    reserved: int = 0
    held: dict[str, int] = field(default_factory=dict)
    expiries: list[tuple[float, str]] = field(default_factory=list)

    def prune(self, now: float) -> None:
        """Drops reservations whose expiry has passed (their process never settled)."""
        expiries = self.expiries
        while expiries and expiries[0][0] <= now:
            _, reservation = heapq.heappop(expiries)
            self.reserved -= self.held.pop(reservation, 0)

    def release(self, reservation: str) -> None:
        """Its heap entry is left for `prune` to skip; once such entries dominate, the heap is
        rebuilt of the held ones (O(held) entries kept, amortised O(1) a call)."""
        self.reserved -= self.held.pop(reservation, 0)
        if len(self.expiries) > 2 * len(self.held) + COMPACT_SLACK:
            held = self.held
            self.expiries = [entry for entry in self.expiries if entry[1] in held]
            heapq.heapify(self.expiries)


class MemoryLedger:
    """One process's counters (they start at zero with it). `clock` is injected for tests."""

    __slots__ = ("_counters", "_slots", "_totals", "clock")

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._slots = Slots()
        self._counters: dict[str, _Counter] = {}
        self._totals: dict[str, int] = {}

    async def reserve(
        self,
        worst_case_usd: float,
        budgets: Sequence[Budget],
        reservation_id: str,
        ttl: float,
        key: str | None = None,
    ) -> Reservation | Exceeded:
        now = self.clock()
        amount = to_nano(worst_case_usd)
        slots = self._slots(budgets, now, ttl)
        counters = []
        for slot in slots:
            counter = self._counters.setdefault(slot.name, _Counter())
            counter.prune(now)
            if counter.spent + counter.reserved + amount > slot.budget.limit:
                return Exceeded(slot.budget, next_reset(slot.budget.period, utc(now)))
            counters.append(counter)
        for counter in counters:
            counter.held[reservation_id] = amount
            counter.reserved += amount
            heapq.heappush(counter.expiries, (now + ttl, reservation_id))
        return Reservation(reservation_id, slots, amount, key)

    async def settle(
        self, reservation: Reservation, actual_usd: float, charged: Container[Budget] | None = None
    ) -> None:
        actual = to_nano(actual_usd)
        for slot in reservation.slots:
            counter = self._counters.setdefault(slot.name, _Counter())
            counter.release(reservation.id)
            if charged is None or slot.budget in charged:
                counter.spent += actual
        if reservation.key is not None:
            self._totals[reservation.key] = self._totals.get(reservation.key, 0) + actual

    async def usage(self, budgets: Sequence[Budget]) -> list[tuple[int, int]]:
        now = self.clock()
        answer = []
        for slot in self._slots(budgets, now, 0):
            counter = self._counters.get(slot.name)
            if counter is None:
                answer.append((0, 0))
                continue
            counter.prune(now)
            answer.append((counter.spent, counter.reserved))
        return answer

    async def key_total(self, key: str) -> int:
        return self._totals.get(key, 0)


# KEYS: per budget, its hash (`spent`, `reserved`, and `r:ID` = each reservation's amount) and
# its sorted set of reservation ids by expiry (Redis' own clock, so replicas need not agree).
# ARGV: id, amount, ttl, n, then per budget its limit and how long to keep its keys (0: ever).
_PRUNE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function release(h, rid)
  local amount = redis.call('HGET', h, 'r:' .. rid)
  if amount then
    redis.call('HDEL', h, 'r:' .. rid)
    if amount ~= '0' then redis.call('HINCRBY', h, 'reserved', '-' .. amount) end
  end
end
local function prune(h, z)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, rid in ipairs(gone) do
    release(h, rid)
  end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
end
local function keep(h, z, seconds)
  if seconds > 0 then
    redis.call('EXPIRE', h, seconds)
    redis.call('EXPIRE', z, seconds)
  end
end
"""

_RESERVE = (
    _PRUNE
    + """
local id, amount, ttl, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 0, n - 1 do
  local h, z = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  prune(h, z)
  local counts = redis.call('HMGET', h, 'spent', 'reserved')
  local used = (tonumber(counts[1]) or 0) + (tonumber(counts[2]) or 0)
  if used + amount > tonumber(ARGV[5 + 2 * i]) then return i + 1 end
end
for i = 0, n - 1 do
  local h, z = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  redis.call('HSET', h, 'r:' .. id, ARGV[2])
  redis.call('HINCRBY', h, 'reserved', ARGV[2])
  redis.call('ZADD', z, now + ttl, id)
  keep(h, z, tonumber(ARGV[6 + 2 * i]))
end
return 0
"""
)

# KEYS: per budget its hash and sorted set, then the key's total (or none). ARGV: id, n, then
# per budget the amount to count as spent and how long to keep its keys, then the total's.
_SETTLE = (
    _PRUNE
    + """
local id, n = ARGV[1], tonumber(ARGV[2])
for i = 0, n - 1 do
  local h, z = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  release(h, id)
  redis.call('ZREM', z, id)
  if ARGV[3 + 2 * i] ~= '0' then redis.call('HINCRBY', h, 'spent', ARGV[3 + 2 * i]) end
  keep(h, z, tonumber(ARGV[4 + 2 * i]))
end
if #KEYS > 2 * n and ARGV[3 + 2 * n] ~= '0' then
  redis.call('INCRBY', KEYS[2 * n + 1], ARGV[3 + 2 * n])
end
return 0
"""
)

_USAGE = (
    _PRUNE
    + """
local answer = {}
for i = 0, #KEYS / 2 - 1 do
  local h, z = KEYS[1 + 2 * i], KEYS[2 + 2 * i]
  prune(h, z)
  local counts = redis.call('HMGET', h, 'spent', 'reserved')
  answer[#answer + 1] = tonumber(counts[1]) or 0
  answer[#answer + 1] = tonumber(counts[2]) or 0
end
return answer
"""
)


class RedisLedger:
    """Counters shared by every replica on one Redis: one round trip to reserve, one to
    settle. Raises StoreDown (from the link) when Redis cannot answer."""

    __slots__ = ("_link", "_prefix", "_reserve", "_settle", "_slots", "_usage", "clock")

    def __init__(self, link: RedisLink, prefix: str, clock: Callable[[], float] = time.time):
        self._link = link
        self._prefix = f"{prefix}spend:"
        self.clock = clock
        self._slots = Slots()
        self._reserve = link.client.register_script(_RESERVE)
        self._settle = link.client.register_script(_SETTLE)
        self._usage = link.client.register_script(_USAGE)

    def _keys(self, slots: Sequence[Slot]) -> list[str]:
        keys = []
        for slot in slots:
            keys += [self._prefix + slot.name, f"{self._prefix}{slot.name}:expiry"]
        return keys

    async def reserve(
        self,
        worst_case_usd: float,
        budgets: Sequence[Budget],
        reservation_id: str,
        ttl: float,
        key: str | None = None,
    ) -> Reservation | Exceeded:
        now = self.clock()
        amount = to_nano(worst_case_usd)
        slots = self._slots(budgets, now, ttl)
        args: list[Any] = [reservation_id, amount, ttl, len(slots)]
        for slot in slots:
            args += [slot.budget.limit, slot.keep]
        keys = self._keys(slots)
        refused = await self._link.call("spend", lambda: self._reserve(keys=keys, args=args))
        if refused:
            budget = slots[int(refused) - 1].budget
            return Exceeded(budget, next_reset(budget.period, utc(now)))
        return Reservation(reservation_id, slots, amount, key)

    async def settle(
        self, reservation: Reservation, actual_usd: float, charged: Container[Budget] | None = None
    ) -> None:
        actual = to_nano(actual_usd)
        slots = reservation.slots
        args: list[Any] = [reservation.id, len(slots)]
        for slot in slots:
            args += [actual if charged is None or slot.budget in charged else 0, slot.keep]
        keys = self._keys(slots)
        if reservation.key is not None:
            keys.append(f"{self._prefix}total:{reservation.key}")
            args.append(actual)
        await self._link.call("spend", lambda: self._settle(keys=keys, args=args))

    async def usage(self, budgets: Sequence[Budget]) -> list[tuple[int, int]]:
        keys = self._keys(self._slots(budgets, self.clock(), 0))
        if not keys:
            return []
        counts = await self._link.call("spend", lambda: self._usage(keys=keys, args=[]))
        return [(int(counts[i]), int(counts[i + 1])) for i in range(0, len(counts), 2)]

    async def key_total(self, key: str) -> int:
        name = f"{self._prefix}total:{key}"
        total = await self._link.call("spend", lambda: self._link.client.get(name))
        return int(total or 0)
