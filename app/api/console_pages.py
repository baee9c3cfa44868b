"""/ui's pages, each given the console once its visitor is known to be an admin
(app/api/console_ui.py). Imported only with a database configured."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from app.api.console_api import config_keys
from app.api.console_ui import query_url, render
from app.console.filters import parse_filters
from app.console.key_body import parse_new_key
from app.console.queries import list_rows, one_row
from app.console.ui import data
from app.console.ui.charts import bar_chart
from app.console.ui.conversation import answer_turn, request_turns
from app.errors import ProxyError

FILTERS = ("model", "key", "status", "api")


def _filters(request: Request) -> dict[str, str]:
    return {n: request.query_params[n] for n in FILTERS if request.query_params.get(n)}


async def _rows(request: Request, console: Any) -> tuple[dict[str, Any], str | None]:
    params = {**_filters(request)}
    if request.query_params.get("cursor"):
        params["cursor"] = request.query_params["cursor"]
    try:
        found = await list_rows(console.engine, parse_filters(params))
    except ProxyError:
        found = {"data": [], "next_cursor": None}
    return found, found["next_cursor"]


async def requests_page(request: Request, console: Any) -> Response:
    found, cursor = await _rows(request, console)
    filters = _filters(request)
    next_url = None if cursor is None else query_url("/ui", {**filters, "cursor": cursor})
    return render(
        request,
        "requests.html",
        title="Requests",
        rows=found["data"],
        filters=filters,
        next_url=next_url,
        live=not request.query_params.get("cursor"),
        live_url=query_url("/ui/rows", filters),
    )


async def rows_fragment(request: Request, console: Any) -> Response:
    found, _ = await _rows(request, console)
    return render(request, "_rows.html", rows=found["data"])


async def request_page(request: Request, console: Any) -> Response:
    row = await one_row(console.engine, request.path_params["row_id"])
    if row is None:
        return render(request, "message.html", 404, title="Requests", message="No such request.")
    turns = None
    if "request" in row or "response" in row:
        turns = request_turns(row["api"], row.get("request"))
        answer = answer_turn(row["api"], row.get("response"), row["tool_calls"])
        if answer is not None:
            turns.append(answer)
    raw = orjson.dumps(row, option=orjson.OPT_INDENT_2).decode()
    return render(request, "request.html", title="Requests", row=row, turns=turns, raw=raw)


async def models_page(request: Request, console: Any) -> Response:
    models = await data.model_stats(console.engine)
    for stats in models.values():
        stats["charts"] = [
            bar_chart(name, values, 100.0 if name.endswith("%") else None)
            for name, values in stats["series"].items()
        ]
    return render(request, "models.html", title="Models", models=models)


async def spend_page(request: Request, console: Any) -> Response:
    groups = [
        (name, await data.spend_by(console.engine, name)) for name in ("key", "team", "model")
    ]
    server = console.server
    budgets = [("model", n, b.usd, b.period) for n, b in server.budgets.items()]
    budgets += [
        ("team", n, t.budget.usd, t.budget.period) for n, t in server.teams.items() if t.budget
    ]
    budgets += [("key", k.name, k.budget.usd, k.budget.period) for k in server.keys if k.budget]
    made = [key for key in await console.keys.listed() if key["budget"]]
    budgets += [("key", k["name"], k["budget"]["usd"], k["budget"]["period"]) for k in made]
    return render(request, "spend.html", title="Spend", groups=groups, budgets=budgets)


async def keys_page(request: Request, console: Any) -> Response:
    proxy = request.app.state.proxy
    made = secret = error = None
    if request.method == "POST":
        form = await request.form()
        body: dict[str, Any] = {"name": str(form.get("name") or "").strip()}
        for name in ("team", "expires_at"):
            if str(form.get(name) or "").strip():
                body[name] = str(form[name]).strip()
        models = [m.strip() for m in str(form.get("models") or "").split(",") if m.strip()]
        if models:
            body["models"] = models
        usd = str(form.get("budget_usd") or "").strip()
        if usd:
            body["budget"] = {"usd": _number(usd), "period": str(form.get("period") or "day")}
        try:
            key = parse_new_key(
                body, {m.name for m in proxy.config.models}, set(proxy.config.providers)
            )
            if key.name in {view["name"] for view in config_keys(proxy)}:
                raise ProxyError(f"The key name '{key.name}' is taken (by the config).")
            created = await console.keys.create(key)
            made, secret = created["name"], created["key"]
        except ProxyError as exc:
            error = exc.message
    keys = config_keys(proxy) + await console.keys.listed()
    return render(
        request, "keys.html", title="Keys", keys=keys, made=made, secret=secret, error=error
    )


def _number(text: str) -> float | str:
    """A form's budget as a number; left as text when it is none, for the 400 to name."""
    try:
        return float(text)
    except ValueError:
        return text


async def revoke_key(request: Request, console: Any) -> Response:
    name = request.path_params["name"]
    if name not in {view["name"] for view in config_keys(request.app.state.proxy)}:
        await console.keys.revoke(name)
    return RedirectResponse("/ui/keys", 303)


async def mcp_page(request: Request, console: Any) -> Response:
    calls = data.mcp_calls(request.app.state.proxy.registry)
    return render(request, "mcp.html", title="MCP", calls=calls)
