"""Budgets around a request: which apply (its key's, its key's team's, its model's), the worst
case it could cost, reserved before it goes upstream (refused with 429 when a budget cannot
hold it, 403 when its model has no price to count it by), and settled to what it cost when it
ends, however it ends. Built only when some budget is configured: without one, dispatch never
calls here and a request does no spend work at all."""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from app.errors import BudgetExceeded, ModelNotPriced, StoreUnavailable
from app.ops.limits import StoreDown
from app.spend.ledger import Budget, Exceeded, Ledger, MemoryLedger, Reservation, to_nano
from app.spend.periods import utc

if TYPE_CHECKING:
    from app.config import Config, TimeoutsConfig
    from app.openai_types import ChatRequest
    from app.ops.keys import ClientKey
    from app.ops.redis_link import RedisLink
    from app.request_record import RequestRecord
    from app.spend.prices import PriceBook
    from app.translators.base import Target

logger = logging.getLogger("toolrelay.spend")

CHARS_PER_TOKEN = 3
"""Input is counted at three characters a token: more tokens than any tokenizer makes of
text, so the reservation is not below what the answer will cost."""
MEDIA_TOKENS = 1600
MESSAGE_TOKENS = 4
INLINE_DATA = b'"data:'
"""How a string starting with `data:` (an inline image or file) begins in JSON."""
TTL_MARGIN = 60.0


class DeploymentLike(Protocol):
    @property
    def target(self) -> Target: ...
    @property
    def timeouts(self) -> TimeoutsConfig: ...


class RouteLike(Protocol):
    """What the guard reads of routing's Route (spend sits below routing)."""

    @property
    def model_name(self) -> str: ...
    @property
    def deployments(self) -> Sequence[DeploymentLike]: ...


@dataclass(slots=True)
class Holds:
    """One request's reservations (a first model's, then any fallback's or later round's)."""

    reservations: list[tuple[Reservation, str]] = field(default_factory=list)


class SpendGuard:
    __slots__ = (
        "_free",
        "_holds",
        "_keys",
        "_models",
        "_output",
        "_settled",
        "_teams",
        "_ttl",
        "closed",
        "ledger",
    )

    def __init__(self, config: Config, ledger: Ledger) -> None:
        server = config.server
        self.ledger = ledger
        self.closed = server.store.on_error == "closed"
        self._free = server.spend.unpriced == "free"
        self._output = server.spend.reserve_output_tokens
        self._ttl = server.spend.reservation_ttl
        self._models = {
            name: Budget("model", name, b.usd, b.period) for name, b in server.budgets.items()
        }
        self._teams = {
            name: Budget("team", name, team.budget.usd, team.budget.period)
            for name, team in server.teams.items()
            if team.budget is not None
        }
        self._keys = {
            key.name: Budget("key", key.name, key.budget.usd, key.budget.period)
            for key in server.keys
            if key.budget is not None
        }
        self._holds: dict[int, Holds] = {}
        self._settled: dict[int, float] = {}
        """By id() of the record: what `settle_so_far` already settled of its cost."""
        """By id() of the request's record: the record lives until `settle` pops it."""

    def budgets(self, key: ClientKey, model: str, first: bool = True) -> list[Budget]:
        """The budgets a request of `key` to `model` counts against; a fallback (`first`
        False) adds only its model's, the key's and team's being held already."""
        found = []
        if first:
            if key.budget is not None:
                found.append(self._keys.get(key.name) or _own_budget(key))
            team = self._teams.get(key.team) if key.team is not None else None
            if team is not None:
                found.append(team)
        model_budget = self._models.get(model)
        if model_budget is not None:
            found.append(model_budget)
        return found

    def model_budgets(self) -> list[Budget]:
        return list(self._models.values())

    async def reserve(
        self,
        record: RequestRecord,
        request: ChatRequest,
        route: RouteLike,
        prices: PriceBook,
        first: bool = True,
    ) -> None:
        """Reserves the request's worst case on `route` against every budget that applies.
        Raises BudgetExceeded, ModelNotPriced, or StoreUnavailable (store down, `closed`)."""
        budgets = self.budgets(record.key, route.model_name, first)
        if not budgets:
            return
        worst = self.worst_case(request, route, prices)
        too_small = [budget for budget in budgets if to_nano(worst) > budget.limit]
        if too_small:
            raise self._never_fits(too_small[0], worst, request, route)
        holds = self._holds.get(id(record))
        key = record.key.name if holds is None else None
        try:
            result = await self.ledger.reserve(
                worst, budgets, secrets.token_hex(8), self.ttl(route), key
            )
        except StoreDown:
            if self.closed:
                raise StoreUnavailable(
                    "The proxy cannot count this request against its budgets right now (its "
                    "store is unreachable), and is set to refuse rather than serve uncounted."
                ) from None
            return
        if isinstance(result, Exceeded):
            raise self._exceeded(result)
        if holds is None:
            holds = self._holds[id(record)] = Holds()
        holds.reservations.append((result, route.model_name))

    async def reserve_usd(self, record: RequestRecord, usd: float) -> None:
        """Reserves a known amount (an /mcp call's `cost_per_call`) against the key's and
        team's budgets; raises as `reserve` does."""
        holds = self._holds.get(id(record))
        budgets = self.budgets(record.key, "", first=holds is None)
        if not budgets:
            return
        key = record.key.name if holds is None else None
        ttl = self._ttl if self._ttl is not None else TTL_MARGIN
        try:
            result = await self.ledger.reserve(usd, budgets, secrets.token_hex(8), ttl, key)
        except StoreDown:
            if self.closed:
                raise StoreUnavailable(
                    "The proxy cannot count this call against its budgets right now (its "
                    "store is unreachable), and is set to refuse rather than serve uncounted."
                ) from None
            return
        if isinstance(result, Exceeded):
            raise self._exceeded(result)
        self._holds.setdefault(id(record), Holds()).reservations.append((result, ""))

    def worst_case(self, request: ChatRequest, route: RouteLike, prices: PriceBook) -> float:
        """The most the request can cost on any of the route's deployments, in USD."""
        input_tokens = estimate_input(request)
        output_tokens = self.output_tokens(request, route) * max(1, request.n or 1)
        worst = 0.0
        for deployment in route.deployments:
            price = prices.for_target(deployment.target)
            if price is None:
                if self._free:
                    continue
                raise ModelNotPriced(
                    f"The model '{route.model_name}' has no price, and a budget applies to "
                    "this request (set its `price`, or server.spend.unpriced: free)."
                )
            cost = input_tokens * max(price.input, price.cache_write)
            worst = max(worst, cost + output_tokens * price.output)
        return worst

    def output_tokens(self, request: ChatRequest, route: RouteLike) -> int:
        return self.output_assumed(request, route)[0]

    def output_assumed(self, request: ChatRequest, route: RouteLike) -> tuple[int, str]:
        """The output maximum a worst case is counted at, and where it came from."""
        if request.output_limit is not None:
            return int(request.output_limit), "the request's output maximum"
        target = route.deployments[0].target
        if target.max_tokens:
            return target.max_tokens, f"the model '{route.model_name}''s max_tokens"
        if target.max_output_tokens:
            return target.max_output_tokens, f"the model '{route.model_name}''s max_output_tokens"
        return self._output, "server.spend.reserve_output_tokens, as the request sets no maximum"

    def _never_fits(
        self, budget: Budget, worst: float, request: ChatRequest, route: RouteLike
    ) -> BudgetExceeded:
        """A worst case past a budget's whole limit: no reset would let it pass, so the client
        is told what was assumed and what to change, and no retry-after."""
        tokens, source = self.output_assumed(request, route)
        choices = request.n or 1
        times = f" for each of {choices} choices" if choices > 1 else ""
        return BudgetExceeded(
            f"Budget exceeded: this request's worst case, {worst:.6g} USD (counting "
            f"{tokens} output tokens{times}, from {source}), is more than the whole of "
            f"{budget.describe()}, so waiting will not help. Send a smaller `max_tokens` "
            "(or raise the budget).",
            retry_after=None,
        )

    def ttl(self, route: RouteLike) -> float:
        if self._ttl is not None:
            return self._ttl
        totals = [d.timeouts.total or 0.0 for d in route.deployments]
        return max(totals, default=0.0) + TTL_MARGIN

    def _exceeded(self, exceeded: Exceeded) -> BudgetExceeded:
        now = utc(self.ledger.clock())
        retry_after = exceeded.retry_after(now)
        if exceeded.resets_at is None:
            when = "It never resets."
        else:
            stamp = exceeded.resets_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            when = f"It resets at {stamp} (in {retry_after} s)."
        return BudgetExceeded(
            f"Budget exceeded: {exceeded.budget.describe()} cannot hold this request. {when}",
            retry_after=retry_after,
        )

    async def settle(self, record: RequestRecord) -> None:
        """Replaces the request's reservations by what it cost (`record.cost_usd`, less what
        `settle_so_far` settled): the key's and team's budgets and the key's total once, the
        model budget of the model that answered (`record.model`); every other reservation is
        released."""
        before = self._settled.pop(id(record), 0.0)
        await self._settle(record, (record.cost_usd or 0.0) - before)

    async def settle_so_far(self, record: RequestRecord) -> None:
        """Between the hosted-tool loop's rounds: the rounds so far are settled at what they
        cost, so a long loop holds a budget to what it spent plus one round's worst case,
        not to every round's worst case at once."""
        spent = record.cost_usd or 0.0
        await self._settle(record, spent - self._settled.get(id(record), 0.0))
        self._settled[id(record)] = spent

    async def _settle(self, record: RequestRecord, actual: float) -> None:
        holds = self._holds.pop(id(record), None)
        if holds is None:
            return
        charged: set[Budget] = set()
        for reservation, _model in holds.reservations:
            wanted = {
                slot.budget
                for slot in reservation.slots
                if slot.budget not in charged
                and (slot.budget.scope != "model" or slot.budget.name == record.model)
            }
            # A store that is down: the reservation lapses at its expiry, the spend is lost.
            with contextlib.suppress(StoreDown):
                await self.ledger.settle(reservation, actual, wanted)
            charged |= wanted


def estimate_input(request: ChatRequest) -> int:
    """The request's input tokens, counted generously from its messages and tools: the length
    of their JSON (every key, string and delimiter; UTF-8 bytes, never fewer than characters)
    over CHARS_PER_TOKEN, one serialisation rather than a Python walk of every string. Only a
    body with an inline `data:` URL is walked, to count each as one media item rather than
    its base64."""
    wire = request.wire
    if wire:
        messages, tools = wire.get("messages") or [], wire.get("tools")
    else:
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        tools = [t.model_dump(exclude_none=True) for t in request.tools or ()]
    try:
        body = orjson.dumps(messages)
        if tools:
            body += orjson.dumps(tools)
    except (TypeError, orjson.JSONEncodeError):
        body = INLINE_DATA
    if INLINE_DATA in body:
        characters, media = _measure(messages)
        more, more_media = _measure(tools)
        characters, media = characters + more, media + more_media
    else:
        characters, media = len(body), 0
    return (
        math.ceil(characters / CHARS_PER_TOKEN)
        + media * MEDIA_TOKENS
        + MESSAGE_TOKENS * len(messages)
    )


def _measure(value: Any) -> tuple[int, int]:
    """(characters, media items) of every string in the value, keys included; a `data:` URL
    (an inline image or file) is one media item, not its base64 characters."""
    if isinstance(value, str):
        return (0, 1) if value.startswith("data:") else (len(value), 0)
    characters = media = 0
    items: Sequence[Any] = ()
    if isinstance(value, dict):
        characters = sum(len(key) for key in value)
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    for item in items:
        more, more_media = _measure(item)
        characters += more
        media += more_media
    return characters, media


def _own_budget(key: ClientKey) -> Budget:
    """The budget a key made at run time carries (app/console/keystore.py): counted under its
    name like a config key's."""
    assert key.budget is not None
    return Budget("key", key.name, key.budget.usd, key.budget.period)


def build_guard(config: Config, store: RedisLink | None) -> SpendGuard | None:
    """The guard, or None when no budget is configured (nothing to do per request). With a
    database, keys made at run time may carry budgets (or teams with one), so it is built."""
    server = config.server
    if not server.has_budgets and server.database is None:
        return None
    if store is None:
        if server.has_budgets:
            logger.warning(
                "budgets are set with server.store kind: memory: spend is this process's alone "
                "and starts at zero on each start (use kind: redis to share it and keep it)"
            )
        return SpendGuard(config, MemoryLedger())
    from app.spend.ledger import RedisLedger  # noqa: PLC0415

    return SpendGuard(config, RedisLedger(store, server.store.prefix))
