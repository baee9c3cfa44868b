"""The console's routes: /v1/logs, /v1/keys and /ui (app/console/)."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from app.api import console_api, console_ui


def console_routes() -> list[BaseRoute]:
    logs, keys = console_api.LOGS_PATH, console_api.KEYS_PATH
    return [
        Route(logs, console_api.logs, methods=["GET"]),
        Route(logs + "/{row_id}", console_api.log, methods=["GET"]),
        Route(keys, console_api.keys, methods=["GET", "POST"]),
        Route(keys + "/{name}", console_api.revoke, methods=["DELETE"]),
        *console_ui.routes(),
    ]
