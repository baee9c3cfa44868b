"""Errors in Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`, with the
status and type its SDKs retry on (PROTOCOLS B.8): an overloaded upstream is 529
`overloaded_error`, whatever kind said it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from app.errors import ProxyError, UpstreamStatusError

TYPES_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
OVERLOADED = 529
DETAILED_CODES = frozenset({"thread_not_found"})
"""Codes Anthropic names in `error.details.error_code`, which its SDK recovers from."""


def anthropic_status(error: ProxyError) -> int:
    upstream = (
        getattr(error, "upstream_status", None) if isinstance(error, UpstreamStatusError) else None
    )
    if error.type == "overloaded_error" or upstream in (503, OVERLOADED):
        return OVERLOADED
    return error.status


def anthropic_error_type(status: int) -> str:
    if status in TYPES_BY_STATUS:
        return TYPES_BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_error_json(error: ProxyError, redact: Callable[[str], str] | None = None) -> bytes:
    message = redact(error.message) if redact is not None else error.message
    inner: dict[str, Any] = {
        "type": anthropic_error_type(anthropic_status(error)),
        "message": message,
    }
    if error.code in DETAILED_CODES:
        inner["details"] = {"error_code": error.code}
    return orjson.dumps({"type": "error", "error": inner})
