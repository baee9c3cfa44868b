"""/ui: the console's pages (app/console/ui/)."""

from __future__ import annotations

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    return []
