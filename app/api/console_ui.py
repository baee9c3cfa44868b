"""/ui: the console's server-rendered pages (templates and assets in app/console/ui/, nothing
fetched from outside). Admins only: a visitor who is not signed in is sent to /ui/login."""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from app.console.errors import AdminKeyMissing, ConsoleNotConfigured, NotAdmin
from app.errors import ProxyError
from app.state import ProxyState

UI = Path(__file__).resolve().parent.parent / "console" / "ui"
STATIC = {"console.css": "text/css", "console.js": "text/javascript"}
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'"
)


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, select_autoescape  # noqa: PLC0415

    return Environment(
        loader=FileSystemLoader(UI / "templates"), autoescape=select_autoescape(default=True)
    )


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    console = request.app.state.proxy.console
    env = getattr(console, "_jinja", None)
    if env is None:
        env = console._jinja = _environment()
    html = env.get_template(template).render(signed_in=not console.admins.open, **context)
    return HTMLResponse(html, status, headers={"content-security-policy": CSP})


def not_found(message: str) -> HTMLResponse:
    """A 404 page without the console (no database, or `console: false`): no template
    environment exists then, so it is written here, the message escaped."""
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ToolRelay console'
        '</title><link rel="stylesheet" href="/ui/static/console.css"></head><body><main>'
        f'<h1>Not found</h1><p class="message">{html.escape(message)}</p></main></body></html>'
    )
    return HTMLResponse(page, 404, headers={"content-security-policy": CSP})


def _console(request: Request) -> Any:
    proxy: ProxyState = request.app.state.proxy
    if proxy.console is None:
        raise ConsoleNotConfigured
    if not proxy.console.ui:
        raise ProxyError("Not found (server.console is false).", code="not_found")
    return proxy.console


def page(name: str) -> Callable[[Request], Awaitable[Response]]:
    """app/api/console_pages.py's `name` for signed-in admins; others to /ui/login (or a 403
    page). The pages module (SQLAlchemy) is imported on the first request, so a config
    without a database never loads it."""

    async def guarded(request: Request) -> Response:
        try:
            console = _console(request)
        except ProxyError as exc:  # ConsoleNotConfigured included
            return not_found(exc.message)
        try:
            console.admins.check(request, cookie=True)
        except AdminKeyMissing:
            return RedirectResponse("/ui/login", 303)
        except NotAdmin as exc:
            return render(request, "message.html", 403, title="Forbidden", message=exc.message)
        from app.api import console_pages  # noqa: PLC0415

        handler: Callable[[Request, Any], Awaitable[Response]] = getattr(console_pages, name)
        return await handler(request, console)

    return guarded


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response(status_code=404)
    return FileResponse(UI / "static" / name, media_type=STATIC[name])


async def login(request: Request) -> Response:
    try:
        console = _console(request)
    except ProxyError as exc:
        return not_found(exc.message)
    if request.method == "GET":
        return render(request, "login.html")
    form = await request.form()
    key = str(form.get("key") or "").strip()
    if console.admins.open or not console.admins.is_admin(key.encode()):
        return render(request, "login.html", 403, error="That is not an admin key.")
    answer = RedirectResponse("/ui", 303)
    answer.set_cookie(
        "toolrelay_session",
        console.admins.new_session(),
        max_age=12 * 3600,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return answer


async def logout(request: Request) -> Response:
    answer = RedirectResponse("/ui/login", 303)
    answer.delete_cookie("toolrelay_session", path="/ui")
    return answer


def routes() -> list[BaseRoute]:
    return [
        Route("/ui/static/{name}", static, methods=["GET"]),
        Route("/ui/login", login, methods=["GET", "POST"]),
        Route("/ui/logout", logout, methods=["POST"]),
        Route("/ui", page("requests_page"), methods=["GET"]),
        Route("/ui/rows", page("rows_fragment"), methods=["GET"]),
        Route("/ui/requests/{row_id}", page("request_page"), methods=["GET"]),
        Route("/ui/models", page("models_page"), methods=["GET"]),
        Route("/ui/spend", page("spend_page"), methods=["GET"]),
        Route("/ui/keys", page("keys_page"), methods=["GET", "POST"]),
        Route("/ui/keys/{name}/revoke", page("revoke_key"), methods=["POST"]),
        Route("/ui/mcp", page("mcp_page"), methods=["GET"]),
    ]


def query_url(path: str, params: dict[str, str]) -> str:
    return f"{path}?{urlencode(params)}" if params else path
