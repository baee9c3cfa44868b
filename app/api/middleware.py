"""Outermost HTTP layer (pure ASGI, no per-request objects): request ids, client keys for
/v1/*, the proxy's own time in `x-toolrelay-overhead-ms`, a catch-all that never shows a
traceback, the hot routes sent straight to their plain ASGI handlers, past the framework's own
layers, and the request's accounting once it is over (app/api/accounting.py)."""

from __future__ import annotations

import logging
import re
import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.accounting import request_ended
from app.api.auth import request_key
from app.console.capture import ROW_APIS, Capture, is_console_path
from app.errors import ProxyError, Redactor, error_json, log_exception
from app.faces.messages.errors import anthropic_error_json, anthropic_status
from app.ops.tracing import RequestSpan
from app.request_record import RequestRecord
from app.state import ProxyState

logger = logging.getLogger("toolrelay.http")

RECORD_KEY = "toolrelay.record"
"""The ASGI scope key of the request's RequestRecord."""

_SAFE_REQUEST_ID = re.compile(rb"^[\x21-\x7e]{1,128}$")
_INTERNAL = ProxyError("Internal error in the proxy.", code="internal_error")
ANTHROPIC_PATHS = "/v1/messages"
"""Paths under this prefix speak Anthropic's API: their errors take its shape."""
EITHER_PATHS = "/v1/models"
"""Paths under this prefix speak Anthropic's API when asked with an `anthropic-version` header
(app/api/models.py), OpenAI's otherwise: their errors follow."""


class RequestMiddleware:
    """`app` serves every request except those in `fast_routes` ((method, path) -> handler)."""

    def __init__(self, app: ASGIApp, fast_routes: dict[tuple[str, str], ASGIApp]) -> None:
        self.app = app
        self.fast_routes = fast_routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        proxy: ProxyState = scope["app"].state.proxy
        headers = dict(scope["headers"])
        request_id = _request_id(headers.get(b"x-request-id"))
        record = scope[RECORD_KEY] = RequestRecord(
            request_id.decode(), scope["method"], scope["path"]
        )
        if proxy.ops.tracing.enabled:
            record.span = _request_span(proxy, record, headers.get(b"traceparent"))

        async def send_with_id(message: Message) -> None:
            if kept is not None and message["type"] == "http.response.body":
                kept.append(message.get("body", b""))
            elif message["type"] == "http.response.start":
                record.status = message["status"]
                overhead = record.headers_sent()
                message["headers"] = [
                    *message.get("headers", ()),
                    (b"x-request-id", request_id),
                    (b"x-toolrelay-overhead-ms", f"{overhead:.2f}".encode()),
                ]
            await send(message)

        kept: list[bytes] | None = None
        try:
            kept, receive = await _admit(proxy, record, scope, headers, receive)
            handler = self.fast_routes.get((scope["method"], scope["path"]), self.app)
            await handler(scope, receive, send_with_id)
        except ProxyError as exc:
            if not record.status:
                record.failed(exc)
                await send_error(send_with_id, scope, exc, proxy.redact)
        except Exception:
            log_exception(logger, proxy.redact, f"unhandled error in request {record.request_id}")
            if not record.status:  # nothing sent yet; after the start we can only stop
                record.failed(_INTERNAL)
                await send_error(send_with_id, scope, _INTERNAL, proxy.redact)
        finally:
            await request_ended(proxy, record, record.elapsed())


async def _admit(
    proxy: ProxyState,
    record: RequestRecord,
    scope: Scope,
    headers: dict[bytes, bytes],
    receive: Receive,
) -> tuple[list[bytes] | None, Receive]:
    """A /v1/ request's key, then (its key known, a console configured, a path with rows) the
    console's Capture on its record: the list the answer's bytes go to (None: not kept) and
    the `receive` that keeps the request's. Paths outside /v1/, and the console's own
    (which take admin keys), need no client key."""
    path = scope["path"]
    if not path.startswith("/v1/") or is_console_path(path):
        return None, receive
    record.key = await request_key(proxy, headers)
    api = ROW_APIS.get(scope["path"]) if scope["method"] == "POST" else None
    if api is None or proxy.console is None:
        return None, receive
    capture: Capture | None = proxy.console.capture(api)
    if capture is None:
        return None, receive
    record.capture = capture
    return capture.response, capture.receiving(receive)


def _request_span(
    proxy: ProxyState, record: RequestRecord, traceparent: bytes | None
) -> RequestSpan | None:
    return proxy.ops.tracing.request_span(
        method=record.method,
        path=record.path,
        request_id=record.request_id,
        traceparent=None if traceparent is None else traceparent.decode("latin-1"),
    )


def _request_id(client_id: bytes | None) -> bytes:
    """The client's id when it is a sane header value, else a new one."""
    if client_id is not None and _SAFE_REQUEST_ID.match(client_id):
        return client_id
    return secrets.token_hex(16).encode()


def rendered_error(scope: Scope, error: ProxyError, redact: Redactor) -> tuple[int, bytes]:
    """The status and body of an error in the shape of the API the request speaks: by its
    path, and for /v1/models by its `anthropic-version` header (looked at only here, once a
    request has failed)."""
    path: str = scope["path"]
    if path.startswith(ANTHROPIC_PATHS) or (
        path.startswith(EITHER_PATHS)
        and any(name == b"anthropic-version" for name, _ in scope["headers"])
    ):
        return anthropic_status(error), anthropic_error_json(error, redact)
    return error.status, error_json(error, redact)


async def send_error(send: Send, scope: Scope, error: ProxyError, redact: Redactor) -> None:
    status, body = rendered_error(scope, error, redact)
    headers = [(name.encode(), value.encode()) for name, value in error.headers.items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
