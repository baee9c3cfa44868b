"""Which deployment the next attempt goes to: spread by weight (or to the least busy) over the
healthy ones, skipping those cooling down after failures. Pure state, no I/O; the clock is
passed in, so tests drive time by hand.

Balancing state is per process. Cooldowns may be shared (SharedCooldowns: a Redis store):
a replica that starts one publishes it, and the others take it in before they pick.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

from app.config import CooldownConfig
from app.routing.affinity import deployment_seed, rendezvous
from app.routing.router import Deployment, Route

SHARE_SECONDS = 1.0
"""How often, at most, a route's shared cooldowns are read (per process)."""


class SharedCooldowns(Protocol):
    """Cooldowns other replicas see: until when (epoch seconds) each deployment rests."""

    async def publish(self, deployment: str, until: float, now: float) -> None: ...

    async def fetch(self, deployments: Sequence[str]) -> dict[str, float]: ...


class Cooldowns:
    """A deployment with `failures` retryable failures within `window` seconds, or one that
    answered 429, is skipped for `seconds` (longer if the upstream's retry-after says so).
    Times are epoch seconds, so replicas sharing cooldowns agree on them."""

    __slots__ = ("_config", "_failures", "_shared_at", "_until")

    def __init__(self, config: CooldownConfig) -> None:
        self._config = config
        self._failures: dict[str, deque[float]] = {}
        self._until: dict[str, float] = {}
        self._shared_at: dict[str, float] = {}

    def failed(
        self, key: str, now: float, *, rate_limited: bool = False, retry_after: float = 0.0
    ) -> float | None:
        """Until when the deployment now cools down, if this failure started a cooldown."""
        config = self._config
        recent = self._failures.setdefault(key, deque())
        recent.append(now)
        while recent and recent[0] <= now - config.window:
            recent.popleft()
        if not (rate_limited or len(recent) >= config.failures):
            return None
        until = max(self._until.get(key, 0.0), now + max(config.seconds, retry_after))
        self._until[key] = until
        recent.clear()
        return until

    def rest(self, key: str, now: float) -> float:
        """Starts a cooldown of `seconds` whatever the failure count (a deployment whose tool
        calls validate too rarely); returns until when it rests."""
        until = max(self._until.get(key, 0.0), now + self._config.seconds)
        self._until[key] = until
        self._failures.pop(key, None)
        return until

    async def share(self, route: Route, shared: SharedCooldowns, now: float) -> None:
        """Takes in the cooldowns other replicas started on the route's deployments, reading
        them at most once every SHARE_SECONDS per route."""
        if self._shared_at.get(route.model_name, -SHARE_SECONDS) > now - SHARE_SECONDS:
            return
        self._shared_at[route.model_name] = now
        for key, until in (await shared.fetch([d.key for d in route.deployments])).items():
            if until > now:
                self._until[key] = max(self._until.get(key, 0.0), until)

    def cooling_until(self, key: str, now: float) -> float:
        """When the deployment may be used again; 0 when it may now."""
        until = self._until.get(key, 0.0)
        if until and until <= now:
            del self._until[key]
            return 0.0
        return until


class Balancer:
    """A conversation's turns go to one deployment (app/routing/affinity.py: a weighted
    rendezvous hash over the healthy ones, whatever the strategy, since a warm prompt cache
    saves more than an even load); a request with no conversation by smooth weighted
    round-robin (nginx's: deterministic, and no deployment gets a burst) or least-busy (fewest
    attempts in flight, ties by weighted round-robin). Deployments cooling down are skipped;
    when every one is, the one that recovers soonest is tried rather than none."""

    __slots__ = ("_current", "_in_flight", "_seeds", "cooldowns")

    def __init__(self, cooldowns: Cooldowns) -> None:
        self.cooldowns = cooldowns
        self._current: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._seeds: dict[str, int] = {}

    def pick(
        self,
        route: Route,
        now: float,
        avoid: Sequence[str] = (),
        conversation: int | None = None,
    ) -> Deployment:
        """`avoid`: deployments that already failed this request, tried again only when
        nothing else is left. `conversation`: the request's conversation key, if it has one
        (app/routing/affinity.py's conversation_key)."""
        deployments = route.deployments
        if len(deployments) == 1:
            return deployments[0]
        fresh = [d for d in deployments if d.key not in avoid] or list(deployments)
        healthy = [d for d in fresh if not self.cooldowns.cooling_until(d.key, now)]
        if not healthy:
            return min(fresh, key=lambda d: self.cooldowns.cooling_until(d.key, now))
        if conversation is not None:
            return self._affine(healthy, conversation)
        if route.strategy == "least-busy":
            fewest = min(self._in_flight.get(d.key, 0) for d in healthy)
            healthy = [d for d in healthy if self._in_flight.get(d.key, 0) == fewest]
        return self._weighted(healthy)

    def _affine(self, candidates: list[Deployment], conversation: int) -> Deployment:
        seeds = self._seeds
        scored = []
        for deployment in candidates:
            seed = seeds.get(deployment.key)
            if seed is None:
                seed = seeds[deployment.key] = deployment_seed(deployment.key)
            scored.append((seed, deployment.weight))
        return candidates[rendezvous(conversation, scored)]

    def _weighted(self, candidates: list[Deployment]) -> Deployment:
        if len(candidates) == 1:
            return candidates[0]
        current = self._current
        total = 0
        best: Deployment | None = None
        for deployment in candidates:
            weight = current.get(deployment.key, 0) + deployment.weight
            current[deployment.key] = weight
            total += deployment.weight
            if best is None or weight > current[best.key]:
                best = deployment
        assert best is not None
        current[best.key] -= total
        return best

    def started(self, key: str) -> None:
        self._in_flight[key] = self._in_flight.get(key, 0) + 1

    def ended(self, key: str) -> None:
        self._in_flight[key] -= 1

    def in_flight(self, key: str) -> int:
        return self._in_flight.get(key, 0)
