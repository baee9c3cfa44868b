"""Renders the framework's errors in the shape of the path's API (OpenAI's `{"error": {...}}`,
or Anthropic's under /v1/messages and on /v1/models asked with `anthropic-version`), with
secrets redacted."""

from __future__ import annotations

from fastapi import Request
from starlette.exceptions import HTTPException
from starlette.responses import Response

from app.api.middleware import RECORD_KEY, rendered_error
from app.errors import ProxyError, RouteNotFound


def error_response(request: Request, error: ProxyError) -> Response:
    """The error as the client gets it; its code and param noted for the request's log line."""
    record = request.scope.get(RECORD_KEY)
    if record is not None:
        record.failed(error)
    status, body = rendered_error(request.scope, error, request.app.state.proxy.redact)
    return Response(body, status_code=status, media_type="application/json", headers=error.headers)


async def handle_proxy_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProxyError)
    return error_response(request, exc)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 in the contract's shape."""
    assert isinstance(exc, HTTPException)
    message = {404: "Unknown path.", 405: "Method not allowed."}.get(exc.status_code, exc.detail)
    error = RouteNotFound(f"{message} ({request.method} {request.url.path})", exc.status_code)
    error.headers.update(exc.headers or {})  # e.g. 405's Allow
    return error_response(request, error)
