"""Where thinking blocks wait for the next turn of their tool loop: an interface, so several
replicas can share one (the operations issue backs it with Redis), and the in-memory store
one process uses by default."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import orjson

from app.memory_blobs import MemoryBlobs

Blocks = list[dict[str, Any]]

TTL_SECONDS = 3600.0  # a tool loop that pauses longer than an hour starts thinking afresh
MAX_BYTES = 64 * 1024 * 1024  # thinking runs to tens of kB per answer; this keeps thousands


class ThinkingStore(Protocol):
    async def save(self, call_ids: Sequence[str], blocks: Blocks) -> None:
        """Keep `blocks` under each of the answer's tool-call ids."""
        ...

    async def load(self, call_ids: Sequence[str]) -> Blocks | None:
        """The blocks saved under the first of `call_ids` that has any; None if none has."""
        ...


class MemoryThinkingStore:
    """One process's store: bounded by age (`ttl`) and by the bytes it holds (`max_bytes`,
    oldest dropped first)."""

    __slots__ = ("_blobs",)

    def __init__(
        self,
        ttl: float = TTL_SECONDS,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._blobs = MemoryBlobs(ttl, max_bytes, clock)

    async def save(self, call_ids: Sequence[str], blocks: Blocks) -> None:
        data = orjson.dumps(blocks)
        await self._blobs.put(dict.fromkeys(call_ids, data))

    async def load(self, call_ids: Sequence[str]) -> Blocks | None:
        for data in await self._blobs.get(call_ids):
            if data is not None:
                blocks: Blocks = orjson.loads(data)
                return blocks
        return None


class ScopedThinkingStore:
    """A store seen through one client key: its ids are kept apart from every other key's, so
    a client that learns another's tool-call ids cannot have that key's thinking restored."""

    __slots__ = ("_prefix", "_store")

    def __init__(self, store: ThinkingStore, scope: str) -> None:
        self._store = store
        self._prefix = f"{scope}\x1f"

    async def save(self, call_ids: Sequence[str], blocks: Blocks) -> None:
        await self._store.save([self._prefix + call_id for call_id in call_ids], blocks)

    async def load(self, call_ids: Sequence[str]) -> Blocks | None:
        return await self._store.load([self._prefix + call_id for call_id in call_ids])
