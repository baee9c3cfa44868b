"""/v1/logs and /v1/keys (CONTRACT.md, "Console: request logs, keys, a web page"): admin
keys only, a 404 naming `server.database` when no database is configured."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.console.errors import Conflict, ConsoleNotConfigured, NotFound
from app.console.filters import parse_filters
from app.console.key_body import key_view, parse_new_key
from app.errors import InvalidRequest
from app.server_config import DEFAULT_KEY_NAME
from app.state import ProxyState

LOGS_PATH = "/v1/logs"
KEYS_PATH = "/v1/keys"
MAX_KEY_BODY = 64 * 1024


def console_of(request: Request) -> Any:
    """The console, once the caller is known to be an admin."""
    proxy: ProxyState = request.app.state.proxy
    if proxy.console is None:
        raise ConsoleNotConfigured
    proxy.console.admins.check(request)
    return proxy.console


async def logs(request: Request) -> JSONResponse:
    from app.console.queries import list_rows  # noqa: PLC0415  (SQLAlchemy: console only)

    console = console_of(request)
    return JSONResponse(await list_rows(console.engine, parse_filters(request.query_params)))


async def log(request: Request) -> JSONResponse:
    from app.console.queries import one_row  # noqa: PLC0415

    console = console_of(request)
    row = await one_row(console.engine, request.path_params["row_id"])
    if row is None:
        raise NotFound("No request with this id in the log.", param="id")
    return JSONResponse(row)


def config_keys(proxy: ProxyState) -> list[dict[str, Any]]:
    """`server.keys`, and one `default` entry standing for `api_keys`: never a secret."""
    server = proxy.config.server
    views = [
        key_view(
            key.name,
            models=key.models,
            limits=key.limits.model_dump(exclude_none=True),
            budget=None if key.budget is None else key.budget.model_dump(),
            team=key.team,
            expires_at=None,
            created_at=None,
            source="config",
        )
        for key in server.keys
    ]
    if server.client_keys:
        views.insert(
            0,
            key_view(
                DEFAULT_KEY_NAME,
                models=None,
                limits={},
                budget=None,
                team=None,
                expires_at=None,
                created_at=None,
                source="config",
            ),
        )
    return views


async def keys(request: Request) -> Response:
    console = console_of(request)
    proxy: ProxyState = request.app.state.proxy
    if request.method == "GET":
        return JSONResponse({"data": config_keys(proxy) + await console.keys.listed()})
    raw = await request.body()
    if len(raw) > MAX_KEY_BODY:
        raise InvalidRequest("The body is too large for a key.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise InvalidRequest("The body is not valid JSON.") from None
    config = proxy.config
    models = {model.name for model in config.models}
    key = parse_new_key(body, models, set(config.providers))
    if key.name in {view["name"] for view in config_keys(proxy)}:
        raise Conflict(f"The key name '{key.name}' is taken (by the config).", param="name")
    return JSONResponse(await console.keys.create(key), status_code=201)


async def revoke(request: Request) -> Response:
    console = console_of(request)
    proxy: ProxyState = request.app.state.proxy
    name = request.path_params["name"]
    if name in {view["name"] for view in config_keys(proxy)}:
        raise Conflict(f"The key '{name}' is the config's: edit config.yaml to remove it.")
    if not await console.keys.revoke(name):
        raise NotFound(f"No key named '{name}'.", param="name")
    return Response(status_code=204)
