"""What replicas share through Redis besides limits: deployment cooldowns (so one replica's
429 spares the others the same failure) and thinking blocks (so the next turn of a tool loop
may land on any replica). Both are best effort: a store that fails costs a cooldown or a
turn's thinking, never a request."""

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
