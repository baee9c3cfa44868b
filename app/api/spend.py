"""GET /v1/spend: the client key's view of its budgets (CONTRACT.md, "Spend: prices, cost,
budgets"): what the store has counted for the key in all, and for its own budget, its team's
and every model's, the limit, what was spent and is reserved in the current period, and when
that period resets."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.api.middleware import RECORD_KEY
from app.errors import StoreUnavailable
from app.ops.limits import StoreDown
from app.request_record import RequestRecord
from app.spend.ledger import NANO
from app.spend.periods import next_reset, utc
from app.state import ProxyState

PATH = "/v1/spend"


async def spend(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    record: RequestRecord = request.scope[RECORD_KEY]
    key = record.key
    guard = proxy.spend
    if guard is None:
        return JSONResponse({"key": key.name, "spent_usd": 0.0, "budgets": []})
    budgets = guard.budgets(key, "") + guard.model_budgets()
    try:
        total = await guard.ledger.key_total(key.name)
        usage = await guard.ledger.usage(budgets)
    except StoreDown:
        raise StoreUnavailable(
            "The proxy cannot read its spend right now: its store is unreachable."
        ) from None
    now = utc(guard.ledger.clock())
    views: list[dict[str, Any]] = []
    for budget, (spent, reserved) in zip(budgets, usage, strict=True):
        resets = next_reset(budget.period, now)
        views.append(
            {
                "scope": budget.scope,
                "name": budget.name,
                "limit_usd": budget.limit_usd,
                "spent_usd": _usd(spent),
                "reserved_usd": _usd(reserved),
                "period": budget.period,
                "resets_at": None if resets is None else resets.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
    return JSONResponse({"key": key.name, "spent_usd": _usd(total), "budgets": views})


def _usd(nano: int) -> float:
    return round(nano / NANO, 9)
