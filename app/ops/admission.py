"""A request's limits end to end: which rules apply (its key's, its model's), admitting it
before its first attempt (a 429 with retry-after when a rule refuses), and settling it once
its answer is over (places freed, real tokens counted). A store that cannot be reached is
handled by `on_error`: `open` serves the request uncounted, `closed` refuses it with 503."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import RateLimited, StoreUnavailable
from app.ops.keys import ClientKey
from app.ops.limits import Limiter, Refusal, Rule, StoreDown
from app.server_config import ServerConfig

LIMIT_NAMES = {
    "rpm": "requests per minute",
    "tpm": "tokens per minute",
    "concurrent": "requests at once",
}


@dataclass(slots=True)
class Lease:
    """The rules one request was counted against, under one id."""

    id: str = field(default_factory=lambda: secrets.token_hex(8))
    rules: list[Rule] = field(default_factory=list)


class Admission:
    __slots__ = ("_limiter", "_model_rules", "_on_refused", "closed")

    def __init__(
        self,
        limiter: Limiter,
        server: ServerConfig,
        on_refused: Callable[[str, str, str], None],
    ) -> None:
        """`on_refused(model, key, limit)` counts each refusal (`limit` is `store` when the
        store was down and `on_error` is closed)."""
        self._limiter = limiter
        self._model_rules = {
            name: Rule(f"model:{name}", limits)
            for name, limits in server.limits.items()
            if limits.any
        }
        self._on_refused = on_refused
        self.closed = server.store.on_error == "closed"

    async def admit(self, lease: Lease | None, key: ClientKey, model: str) -> Lease | None:
        """Counts the request against `key`'s and `model`'s rules (only the model's when
        `lease` is already held: a fallback), returning the lease that holds them, or None
        when no rule applies. Raises RateLimited or StoreUnavailable."""
        rules = [] if lease is not None else [key.rule]
        rules.append(self._model_rules.get(model))
        wanted = [rule for rule in rules if rule is not None]
        if not wanted:
            return lease
        held = lease or Lease()
        try:
            refusal = await self._limiter.admit(wanted, held.id)
        except StoreDown:
            if self.closed:
                self._on_refused(model, key.name, "store")
                raise StoreUnavailable(
                    "The proxy cannot count this request against its limits right now (its "
                    "store is unreachable), and is set to refuse rather than serve uncounted."
                ) from None
            return lease
        if refusal is not None:
            self._on_refused(model, key.name, refusal.limit)
            raise _rate_limited(refusal)
        held.rules += wanted
        return held

    async def settle(self, lease: Lease, key: ClientKey, model: str | None, tokens: int) -> None:
        """Frees the lease's places and counts `tokens` against the key and the model that
        answered."""
        charged = [
            rule
            for rule in lease.rules
            if rule == key.rule or (model is not None and rule == self._model_rules.get(model))
        ]
        # A store that is down loses the count; the places lapse on their own (redis_limits.py).
        with contextlib.suppress(StoreDown):
            await self._limiter.settle(lease.rules, lease.id, charged, tokens)


def _rate_limited(refusal: Refusal) -> RateLimited:
    scope, _, name = refusal.rule.scope.partition(":")
    whose = f"the key '{name}'" if scope == "key" else f"the model '{name}'"
    limit = getattr(refusal.rule.limits, refusal.limit)
    return RateLimited(
        f"Rate limit reached for {whose} ({LIMIT_NAMES[refusal.limit]}: {limit}). "
        f"Try again in {refusal.retry_after} s.",
        tokens=refusal.limit == "tpm",
        retry_after=refusal.retry_after,
    )
