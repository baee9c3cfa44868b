"""Where stored responses live (CONTRACT.md, "OpenAI Responses API": stored responses), and
Anthropic threads with them: each answer with the conversation that led to it, and every item
by its own id (for `item_reference`s), scoped to the client key that made them and kept for
`server.responses.ttl` seconds. In memory (one process, bounded) or in Redis (shared by
replicas).

A record holds the whole conversation before its answer, not a link to the previous record:
chaining then costs one read however long the chain, and a chain outlives a middle record's
expiry or deletion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from app.errors import StoreUnavailable
from app.memory_blobs import MemoryBlobs
from app.ops.limits import StoreDown

if TYPE_CHECKING:
    from app.ops.redis_link import RedisLink

Record = dict[str, Any]


__all__ = ["Blobs", "MemoryBlobs", "RedisBlobs", "ResponseStore"]


class Blobs(Protocol):
    async def put(self, entries: dict[str, bytes]) -> None: ...

    async def get(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def delete(self, key: str) -> bool: ...


class RedisBlobs:
    """The same in Redis: keys that expire with the ttl, written in one pipelined round trip,
    read with one MGET."""

    __slots__ = ("_link", "_ttl")

    def __init__(self, link: RedisLink, ttl: float) -> None:
        self._link = link
        self._ttl = max(1, int(ttl))

    async def put(self, entries: dict[str, bytes]) -> None:
        async def write() -> None:
            async with self._link.client.pipeline(transaction=False) as pipe:
                for key, value in entries.items():
                    pipe.set(key, value, ex=self._ttl)
                await pipe.execute()

        await self._link.call("responses", write)

    async def get(self, keys: Sequence[str]) -> list[bytes | None]:
        values = await self._link.call("responses", lambda: self._link.client.mget(list(keys)))
        return [value.encode() if isinstance(value, str) else value for value in values]

    async def delete(self, key: str) -> bool:
        removed: int = await self._link.call("responses", lambda: self._link.client.delete(key))
        return removed > 0


class ResponseStore:
    """Records and items by id, each key prefixed with the client key's scope, so no key can
    read, chain to or delete another's. A store that cannot be reached is a 503."""

    __slots__ = ("_blobs", "_prefix")

    def __init__(self, blobs: Blobs, prefix: str = "") -> None:
        self._blobs = blobs
        self._prefix = prefix

    async def save(self, scope: str, record_id: str, record: Record, items: list[Any]) -> None:
        entries = {self._key(scope, "r", record_id): orjson.dumps(record)}
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                entries[self._key(scope, "i", item["id"])] = orjson.dumps(item)
        await self._call(self._blobs.put(entries))

    async def load(self, scope: str, record_id: str) -> Record | None:
        (found,) = await self._call(self._blobs.get([self._key(scope, "r", record_id)]))
        return None if found is None else orjson.loads(found)

    async def delete(self, scope: str, record_id: str) -> bool:
        deleted: bool = await self._call(self._blobs.delete(self._key(scope, "r", record_id)))
        return deleted

    async def items(self, scope: str, item_ids: Sequence[str]) -> dict[str, Any]:
        if not item_ids:
            return {}
        keys = [self._key(scope, "i", item_id) for item_id in item_ids]
        found = await self._call(self._blobs.get(keys))
        return {
            item_id: orjson.loads(value)
            for item_id, value in zip(item_ids, found, strict=True)
            if value is not None
        }

    def _key(self, scope: str, kind: str, record_id: str) -> str:
        return f"{self._prefix}responses:{scope}:{kind}:{record_id}"

    @staticmethod
    async def _call(pending: Any) -> Any:
        try:
            return await pending
        except StoreDown:
            raise StoreUnavailable(
                "The response store cannot be reached; try again shortly."
            ) from None
