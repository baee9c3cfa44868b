"""Limits counted in Redis, shared by every instance that points at it: one Lua script checks
and counts all of a request's rules atomically (one round trip), another frees its places and
counts its tokens. Time is Redis' own clock, so instances need not agree on theirs.

Keys (under the configured prefix): `limit:{scope}:rpm` and `:tpm` are hashes of one-second
buckets, expiring with their window; `:concurrent` is a sorted set of the leases holding a
place, scored by when they lapse, so a place held by an instance that died frees itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.ops.limits import WINDOW, LimitName, Refusal, Rule
from app.ops.redis_link import RedisLink

LEASE_SECONDS = 900
"""The longest a request may hold a concurrency place: longer than any answer the default
timeouts allow."""

_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local second = tonumber(t[1])
local window = tonumber(ARGV[1])
local lease, lease_seconds, rules = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

local function over(key, limit)
  local fields = redis.call('HGETALL', key)
  local total, live = 0, {}
  for i = 1, #fields, 2 do
    local bucket, amount = tonumber(fields[i]), tonumber(fields[i + 1])
    if bucket <= second - window then
      redis.call('HDEL', key, fields[i])
    else
      total = total + amount
      live[#live + 1] = {bucket, amount}
    end
  end
  if total < limit then return nil end
  table.sort(live, function(a, b) return a[1] < b[1] end)
  for _, entry in ipairs(live) do
    total = total - entry[2]
    if total < limit then return math.max(1, math.ceil(entry[1] + window - now)) end
  end
  return 1
end

for i = 0, rules - 1 do
  local rpm, tpm, concurrent = tonumber(ARGV[5 + i * 3]), tonumber(ARGV[6 + i * 3]),
    tonumber(ARGV[7 + i * 3])
  local wait
  if rpm > 0 then
    wait = over(KEYS[1 + i * 3], rpm)
    if wait then return {i + 1, 'rpm', wait} end
  end
  if tpm > 0 then
    wait = over(KEYS[2 + i * 3], tpm)
    if wait then return {i + 1, 'tpm', wait} end
  end
  if concurrent > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[3 + i * 3], '-inf', now)
    if redis.call('ZCARD', KEYS[3 + i * 3]) >= concurrent then return {i + 1, 'concurrent', 1} end
  end
end
for i = 0, rules - 1 do
  if tonumber(ARGV[5 + i * 3]) > 0 then
    redis.call('HINCRBY', KEYS[1 + i * 3], second, 1)
    redis.call('EXPIRE', KEYS[1 + i * 3], window + 1)
  end
  if tonumber(ARGV[7 + i * 3]) > 0 then
    redis.call('ZADD', KEYS[3 + i * 3], now + lease_seconds, lease)
    redis.call('EXPIRE', KEYS[3 + i * 3], lease_seconds + 1)
  end
end
return {0}
"""

_SETTLE = """
local second = tonumber(redis.call('TIME')[1])
local window = tonumber(ARGV[1])
local lease, tokens, rules = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 0, rules - 1 do
  if ARGV[5 + i * 2] == '1' then redis.call('ZREM', KEYS[3 + i * 3], lease) end
  if ARGV[6 + i * 2] == '1' and tokens > 0 then
    redis.call('HINCRBY', KEYS[2 + i * 3], second, tokens)
    redis.call('EXPIRE', KEYS[2 + i * 3], window + 1)
  end
end
return 0
"""


class RedisLimiter:
    """Raises StoreDown (from the link) when Redis cannot answer; the caller applies
    `on_error`."""

    __slots__ = ("_admit", "_link", "_prefix", "_settle")

    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = prefix
        self._admit = link.client.register_script(_ADMIT)
        self._settle = link.client.register_script(_SETTLE)

    def _keys(self, rules: Sequence[Rule]) -> list[str]:
        keys = []
        for rule in rules:
            base = f"{self._prefix}limit:{rule.scope}:"
            keys += [base + "rpm", base + "tpm", base + "concurrent"]
        return keys

    async def admit(self, rules: Sequence[Rule], lease: str) -> Refusal | None:
        args: list[Any] = [WINDOW, lease, LEASE_SECONDS, len(rules)]
        for rule in rules:
            limits = rule.limits
            args += [limits.rpm or 0, limits.tpm or 0, limits.concurrent or 0]
        keys = self._keys(rules)
        answer = await self._link.call("admit", lambda: self._admit(keys=keys, args=args))
        if answer[0] == 0:
            return None
        limit: LimitName = answer[1].decode()
        return Refusal(rules[answer[0] - 1], limit, int(answer[2]))

    async def settle(
        self, rules: Sequence[Rule], lease: str, charged: Sequence[Rule], tokens: int
    ) -> None:
        args: list[Any] = [WINDOW, lease, tokens, len(rules)]
        for rule in rules:
            releases = rule.limits.concurrent is not None
            args += [int(releases), int(rule in charged and rule.limits.tpm is not None)]
        keys = self._keys(rules)
        await self._link.call("settle", lambda: self._settle(keys=keys, args=args))
