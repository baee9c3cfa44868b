"""Request, token and concurrency limits over sliding 60 s windows: the interface both stores
implement, and the in-memory one a single process uses (the default).

A window is kept as one-second buckets, so "the last 60 s" slides a second at a time and its
state is bounded (60 buckets per counter) whatever the traffic."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from app.server_config import Limits

WINDOW = 60
LimitName = Literal["rpm", "tpm", "concurrent"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One set of counters: `scope` names what they count (`key:alice`, `model:claude`)."""

    scope: str
    limits: Limits


@dataclass(frozen=True, slots=True)
class Refusal:
    rule: Rule
    limit: LimitName
    retry_after: int
    """Whole seconds until the limit would let this request through."""


class StoreDown(Exception):
    """A shared store could not answer a call (unreachable, slow, or refusing)."""


class Limiter(Protocol):
    async def admit(self, rules: Sequence[Rule], lease: str) -> Refusal | None:
        """Counts the request against every rule, or against none when one refuses it (that
        refusal is returned). A rule with `concurrent` holds a place under `lease` until
        `settle`."""
        ...

    async def settle(
        self, rules: Sequence[Rule], lease: str, charged: Sequence[Rule], tokens: int
    ) -> None:
        """The request is over: its places under `rules` are freed, and `tokens` counted
        against the `charged` rules that have a `tpm`."""
        ...


class _Window:
    """Amounts per whole second over the last WINDOW seconds, with their running total."""

    __slots__ = ("buckets", "total")

    def __init__(self) -> None:
        self.buckets: deque[list[int]] = deque()  # [second, amount], oldest first
        self.total = 0

    def slide(self, second: int) -> None:
        buckets = self.buckets
        while buckets and buckets[0][0] <= second - WINDOW:
            self.total -= buckets.popleft()[1]

    def add(self, second: int, amount: int) -> None:
        buckets = self.buckets
        if buckets and buckets[-1][0] == second:
            buckets[-1][1] += amount
        else:
            buckets.append([second, amount])
        self.total += amount

    def retry_after(self, limit: int, now: float) -> int:
        """Seconds until enough of the oldest buckets have left for the total to be below
        `limit`."""
        total = self.total
        for second, amount in self.buckets:
            total -= amount
            if total < limit:
                return max(1, math.ceil(second + WINDOW - now))
        return 1


class MemoryLimiter:
    """One process's counts. `clock` is injected so tests drive time by hand."""

    __slots__ = ("_clock", "_held", "_requests", "_tokens")

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._requests: dict[str, _Window] = {}
        self._tokens: dict[str, _Window] = {}
        self._held: dict[str, set[str]] = {}

    async def admit(self, rules: Sequence[Rule], lease: str) -> Refusal | None:
        now = self._clock()
        second = int(now)
        for rule in rules:
            refusal = self._refusal(rule, now, second)
            if refusal is not None:
                return refusal
        for rule in rules:
            limits = rule.limits
            if limits.rpm is not None:
                self._requests[rule.scope].add(second, 1)
            if limits.concurrent is not None:
                self._held.setdefault(rule.scope, set()).add(lease)
        return None

    def _refusal(self, rule: Rule, now: float, second: int) -> Refusal | None:
        limits = rule.limits
        if limits.rpm is not None:
            requests = self._requests.setdefault(rule.scope, _Window())
            requests.slide(second)
            if requests.total >= limits.rpm:
                return Refusal(rule, "rpm", requests.retry_after(limits.rpm, now))
        if limits.tpm is not None:
            tokens = self._tokens.setdefault(rule.scope, _Window())
            tokens.slide(second)
            if tokens.total >= limits.tpm:
                return Refusal(rule, "tpm", tokens.retry_after(limits.tpm, now))
        if limits.concurrent is not None and len(self._held.get(rule.scope, ())) >= (
            limits.concurrent
        ):
            return Refusal(rule, "concurrent", 1)
        return None

    async def settle(
        self, rules: Sequence[Rule], lease: str, charged: Sequence[Rule], tokens: int
    ) -> None:
        for rule in rules:
            if rule.limits.concurrent is not None:
                self._held.get(rule.scope, set()).discard(lease)
        if tokens <= 0:
            return
        second = int(self._clock())
        for rule in charged:
            if rule.limits.tpm is not None:
                window = self._tokens.setdefault(rule.scope, _Window())
                window.slide(second)
                window.add(second, tokens)
