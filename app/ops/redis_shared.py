"""What replicas share through Redis besides limits: deployment cooldowns (so one replica's
429 spares the others the same failure), each deployment's recent tool-call verdicts (so
replicas agree on its valid rate) and thinking blocks (so the next turn of a tool loop may
land on any replica). All best effort: a store that fails costs a cooldown, a measurement or
a turn's thinking, never a request."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import orjson

from app.ops.limits import StoreDown
from app.ops.redis_link import RedisLink
from app.reasoning.store import TTL_SECONDS, Blocks


class RedisCooldowns:
    """Until when each deployment cools down (epoch seconds), as keys that expire with it."""

    __slots__ = ("_link", "_prefix")

    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = f"{prefix}cooldown:"

    async def publish(self, deployment: str, until: float, now: float) -> None:
        milliseconds = max(1, int((until - now) * 1000))
        key = self._prefix + deployment
        with contextlib.suppress(StoreDown):
            await self._link.call(
                "cooldown", lambda: self._link.client.set(key, repr(until), px=milliseconds)
            )

    async def fetch(self, deployments: Sequence[str]) -> dict[str, float]:
        keys = [self._prefix + deployment for deployment in deployments]
        try:
            values = await self._link.call("cooldown", lambda: self._link.client.mget(keys))
        except StoreDown:
            return {}
        return {
            deployment: float(value)
            for deployment, value in zip(deployments, values, strict=True)
            if value is not None
        }


# KEYS[1]: the deployment's verdict list; ARGV[1]: the window; ARGV[2..]: "1" ok, "0" not.
# Newest first; trimmed to the window; returns {ok, judged} over it. Expires after a day of
# silence, so a deployment removed from the config leaves nothing behind.
_ADD_VERDICTS = """
redis.call('LPUSH', KEYS[1], unpack(ARGV, 2))
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
redis.call('EXPIRE', KEYS[1], 86400)
local ok = 0
for _, verdict in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  if verdict == '1' then ok = ok + 1 end
end
return {ok, redis.call('LLEN', KEYS[1])}
"""


class RedisQualityCounts:
    """Each deployment's last `window` tool-call verdicts as a Redis list: one script call
    per audit pushes them, trims the list and counts it, so replicas share one window."""

    __slots__ = ("_link", "_prefix", "_script")

    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = f"{prefix}quality:"
        self._script = link.client.register_script(_ADD_VERDICTS)

    async def add(self, deployment: str, verdicts: Sequence[bool], window: int) -> tuple[int, int]:
        """(ok, judged) over the window after adding; (0, 0) when the store is down."""
        args = [window, *("1" if verdict else "0" for verdict in verdicts)]
        key = self._prefix + deployment
        try:
            ok, judged = await self._link.call(
                "quality", lambda: self._script(keys=[key], args=args)
            )
        except StoreDown:
            return 0, 0
        return int(ok), int(judged)

    async def reset(self, deployment: str) -> None:
        """Forgets the verdicts: a deployment back from a quality cooldown is judged afresh."""
        key = self._prefix + deployment
        with contextlib.suppress(StoreDown):
            await self._link.call("quality", lambda: self._link.client.delete(key))


class RedisThinkingStore:
    """The ThinkingStore protocol in Redis: one key per tool-call id, expiring after the
    in-memory store's TTL. Saving is one pipelined round trip, loading one MGET."""

    __slots__ = ("_link", "_prefix", "_ttl")

    def __init__(self, link: RedisLink, prefix: str, ttl: float = TTL_SECONDS) -> None:
        self._link = link
        self._prefix = f"{prefix}thinking:"
        self._ttl = int(ttl)

    async def save(self, call_ids: Sequence[str], blocks: Blocks) -> None:
        data = orjson.dumps(blocks)

        async def write() -> None:
            async with self._link.client.pipeline(transaction=False) as pipe:
                for call_id in call_ids:
                    pipe.set(self._prefix + call_id, data, ex=self._ttl)
                await pipe.execute()

        with contextlib.suppress(StoreDown):
            await self._link.call("thinking", write)

    async def load(self, call_ids: Sequence[str]) -> Blocks | None:
        keys = [self._prefix + call_id for call_id in call_ids]
        try:
            values = await self._link.call("thinking", lambda: self._link.client.mget(keys))
        except StoreDown:
            return None
        for value in values:
            if value is not None:
                blocks: Blocks = orjson.loads(value)
                return blocks
        return None
