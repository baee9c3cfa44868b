"""Renders every error as OpenAI's `{"error": {...}}`, with secrets redacted."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request
from starlette.exceptions import HTTPException
from starlette.responses import Response

from app.errors import ProxyError, RouteNotFound, error_json


def error_response(error: ProxyError, redact: Callable[[str], str]) -> Response:
    return Response(
        error_json(error, redact),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


async def handle_proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return error_response(exc, request.app.state.proxy.redact)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 in the contract's shape."""
    assert isinstance(exc, HTTPException)
    message = {404: "Unknown path.", 405: "Method not allowed."}.get(exc.status_code, exc.detail)
    error = RouteNotFound(f"{message} ({request.method} {request.url.path})", exc.status_code)
    error.headers.update(exc.headers or {})  # e.g. 405's Allow
    return error_response(error, request.app.state.proxy.redact)
