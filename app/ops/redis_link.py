"""The one connection to a shared Redis, and what happens when it fails: every call is bounded
by a short timeout, a failure is counted and logged once (not once per request), and for a
second afterwards calls fail at once instead of waiting on a dead server again."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

import redis.asyncio as redis
from redis.exceptions import RedisError

from app.ops.limits import StoreDown

logger = logging.getLogger("toolrelay.store")

T = TypeVar("T")
RETRY_SECONDS = 1.0
"""After a failure, calls fail at once for this long before the server is tried again."""


class RedisLink:
    __slots__ = ("_clock", "_down_until", "_failing", "_on_error", "_timeout", "client", "where")

    def __init__(
        self,
        url: str,
        timeout: float,
        on_error: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client: redis.Redis = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False
        )
        parts = urlsplit(url)
        self.where = f"{parts.hostname}:{parts.port or 6379}"  # never the password in the URL
        self._timeout = timeout
        self._on_error = on_error
        self._clock = clock
        self._down_until = 0.0
        self._failing = False

    async def call(self, operation: str, make: Callable[[], Awaitable[T]]) -> T:
        """`make()`'s result; StoreDown if the store is down, slow or refuses. `operation`
        names the call in the error count and log."""
        if self._down_until and self._clock() < self._down_until:
            self._on_error(operation)
            raise StoreDown(operation)
        try:
            async with asyncio.timeout(self._timeout):
                result = await make()
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(operation, exc)
            raise StoreDown(operation) from None
        if self._failing:
            self._failing = False
            logger.warning("the store at %s answers again", self.where)
        self._down_until = 0.0
        return result

    def _failed(self, operation: str, exc: BaseException) -> None:
        self._on_error(operation)
        self._down_until = self._clock() + RETRY_SECONDS
        if not self._failing:
            self._failing = True
            reason = type(exc).__name__ if isinstance(exc, TimeoutError) else str(exc)
            logger.warning("the store at %s failed (%s: %s)", self.where, operation, reason)

    async def aclose(self) -> None:
        await self.client.aclose()
