"""Where thinking blocks wait for the next turn of their tool loop: an interface, so several
replicas can share one (the operations issue backs it with Redis), and the in-memory store
one process uses by default."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import orjson

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
    oldest dropped first). Blocks are kept serialised, so what comes back is a fresh copy
    that no caller can have changed, and its size is known."""

    __slots__ = ("_clock", "_entries", "_max_bytes", "_size", "_ttl")

    def __init__(
        self,
        ttl: float = TTL_SECONDS,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._size = 0

    async def save(self, call_ids: Sequence[str], blocks: Blocks) -> None:
        now = self._clock()
        data = orjson.dumps(blocks)
        for call_id in call_ids:
            self._drop(call_id)
            self._entries[call_id] = (now + self._ttl, data)
            self._size += len(data)
        # Entries are in the order they were saved, which with one ttl is the order they expire.
        while self._entries:
            oldest = next(iter(self._entries))
            if self._size <= self._max_bytes and self._entries[oldest][0] > now:
                break
            self._drop(oldest)

    async def load(self, call_ids: Sequence[str]) -> Blocks | None:
        now = self._clock()
        for call_id in call_ids:
            entry = self._entries.get(call_id)
            if entry is None:
                continue
            expires, data = entry
            if expires <= now:
                self._drop(call_id)
                continue
            blocks: Blocks = orjson.loads(data)
            return blocks
        return None

    def _drop(self, call_id: str) -> None:
        entry = self._entries.pop(call_id, None)
        if entry is not None:
            self._size -= len(entry[1])


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
