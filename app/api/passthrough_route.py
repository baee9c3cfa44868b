"""The route of every other `/v1/` path (app/api/passthrough.py), kept apart from its handler so
that the handler, and httpx with it, is imported on the first request passed through, not by
every proxy at start-up (DESIGN.md, "imports")."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

PATH = "/v1/{path:path}"


class _FirstUseHandler:
    """app.api.passthrough's handler, imported when first called."""

    __slots__ = ("_handler",)

    def __init__(self) -> None:
        self._handler: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self._handler
        if handler is None:
            from app.api.passthrough import passthrough  # noqa: PLC0415

            handler = self._handler = passthrough
        await handler(scope, receive, send)


class PassthroughRoute(Route):
    """`/v1/{path}`, every method, except paths an earlier route serves: those keep their
    own 405 for a method they do not take (GET /v1/chat/completions is not passed on)."""

    def __init__(self, owned: Sequence[BaseRoute]) -> None:
        super().__init__(PATH, _FirstUseHandler())
        self._owned = list(owned)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if any(route.matches(scope)[0] is not Match.NONE for route in self._owned):
            return Match.NONE, {}
        return super().matches(scope)
