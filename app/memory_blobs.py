"""Bytes by key in one process's memory, bounded by age and by the bytes held, oldest dropped
first: the memory backing of the stores replicas would share through Redis (stored responses,
thinking blocks)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class MemoryBlobs:
    """Values are bytes, so what comes back is a copy no caller can have changed, and its
    size is known."""

    __slots__ = ("_clock", "_entries", "_max_bytes", "_size", "_ttl")

    def __init__(
        self,
        ttl: float,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._size = 0

    async def put(self, entries: dict[str, bytes]) -> None:
        now = self._clock()
        for key, value in entries.items():
            self._drop(key)
            self._entries[key] = (now + self._ttl, value)
            self._size += len(value)
        # Entries are in the order they were written, which with one ttl is the order they expire.
        while self._entries:
            oldest = next(iter(self._entries))
            if self._size <= self._max_bytes and self._entries[oldest][0] > now:
                break
            self._drop(oldest)

    async def get(self, keys: Sequence[str]) -> list[bytes | None]:
        now = self._clock()
        found: list[bytes | None] = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry[0] <= now:
                self._drop(key)
                entry = None
            found.append(None if entry is None else entry[1])
        return found

    def keys(self) -> list[str]:
        """The keys held, oldest first (expired ones included until a write drops them)."""
        return list(self._entries)

    async def delete(self, key: str) -> bool:
        return self._drop(key)

    def _drop(self, key: str) -> bool:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._size -= len(entry[1])
        return entry is not None
