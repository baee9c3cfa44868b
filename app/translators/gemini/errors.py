"""Gemini's errors -> ProxyErrors: HTTP error answers, and `{"error": {...}}` frames that arrive
inside a stream after HTTP 200 (PROTOCOLS C.7).

Gemini's error is `{"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED",
"details": [...]}}`, sometimes wrapped in a one-element list. `status` is a gRPC name; it
gives the OpenAI error `type`, and the status code when an in-stream error has no usable
`code`. Rate limits usually carry no retry-after header but a `RetryInfo` detail, which is
turned into one so the router and the client's SDK wait as long as Gemini asked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import orjson

from app.errors import ProxyError, UpstreamStatusError, UpstreamStreamError
from app.translators.base import retry_headers

# gRPC status -> (HTTP status, OpenAI error type).
STATUSES: dict[str, tuple[int, str]] = {
    "INVALID_ARGUMENT": (400, "invalid_request_error"),
    "FAILED_PRECONDITION": (400, "invalid_request_error"),
    "OUT_OF_RANGE": (400, "invalid_request_error"),
    "UNAUTHENTICATED": (401, "authentication_error"),
    "PERMISSION_DENIED": (403, "permission_error"),
    "NOT_FOUND": (404, "not_found_error"),
    "RESOURCE_EXHAUSTED": (429, "rate_limit_error"),
    "INTERNAL": (500, "api_error"),
    "UNAVAILABLE": (503, "api_error"),
    "DEADLINE_EXCEEDED": (504, "timeout_error"),
}

# Gemini answers a bad key with 400 INVALID_ARGUMENT; OpenAI clients expect 401 (F.20).
INVALID_KEY_REASON = "API_KEY_INVALID"

_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)s")


def parse_error(status: int, body: bytes, headers: Mapping[str, str]) -> ProxyError:
    """An HTTP error answer, with Gemini's own message (which names the offending field and
    never echoes the key). 5xx become 502 inside UpstreamStatusError."""
    gemini_error = _error_object(body)
    message = _message(gemini_error, f"the gemini upstream answered HTTP {status}")
    reason = _reason(gemini_error)
    grpc_status = _grpc_status(gemini_error)
    error_type = STATUSES[grpc_status][1] if grpc_status in STATUSES else None
    if reason == INVALID_KEY_REASON:
        status, error_type = 401, "authentication_error"
    return UpstreamStatusError(
        status,
        message,
        type=error_type,
        code=reason or grpc_status,
        headers=retry_headers(headers) or _retry_info(gemini_error),
    )


def stream_error(gemini_error: Any, started: bool) -> ProxyError:
    """An error frame. Before any chunk went to the client it is an ordinary error with
    Gemini's status (a 429 stays a 429 the router may retry); after, it goes in-band."""
    gemini_error = gemini_error if isinstance(gemini_error, dict) else {}
    message = _message(gemini_error, "the gemini upstream reported an error during the stream")
    grpc_status = _grpc_status(gemini_error)
    status, error_type = STATUSES.get(grpc_status or "", (502, "api_error"))
    code = gemini_error.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        status = code
    reason = _reason(gemini_error) or grpc_status
    if started:
        return UpstreamStreamError(message, type=error_type, code=reason)
    return UpstreamStatusError(
        status, message, type=error_type, code=reason, headers=_retry_info(gemini_error)
    )


def _error_object(body: bytes) -> dict[str, Any]:
    """The inner error object, or {} for anything else (a proxy's HTML page, an empty body)."""
    try:
        upstream_body = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    if isinstance(upstream_body, list) and len(upstream_body) == 1:
        upstream_body = upstream_body[0]
    gemini_error = upstream_body.get("error") if isinstance(upstream_body, dict) else None
    return gemini_error if isinstance(gemini_error, dict) else {}


def _message(gemini_error: Mapping[str, Any], default: str) -> str:
    message = gemini_error.get("message")
    return message if isinstance(message, str) and message else default


def _grpc_status(gemini_error: Mapping[str, Any]) -> str | None:
    grpc_status = gemini_error.get("status")
    return grpc_status if isinstance(grpc_status, str) and grpc_status else None


def _details(gemini_error: Mapping[str, Any]) -> list[dict[str, Any]]:
    details = gemini_error.get("details")
    return [item for item in details if isinstance(item, dict)] if isinstance(details, list) else []


def _reason(gemini_error: Mapping[str, Any]) -> str | None:
    """The ErrorInfo `reason` (API_KEY_INVALID, RATE_LIMIT_EXCEEDED...), the most specific
    code Gemini gives."""
    for detail in _details(gemini_error):
        reason = detail.get("reason")
        if isinstance(reason, str) and reason:
            return reason
    return None


def _retry_info(gemini_error: Mapping[str, Any]) -> dict[str, str]:
    """`RetryInfo.retryDelay` ("37s", "1.5s") as retry-after (whole seconds, rounded up) and
    retry-after-ms, which the OpenAI SDK reads first."""
    for detail in _details(gemini_error):
        delay = detail.get("retryDelay")
        matched = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
        if detail.get("@type") == _RETRY_INFO and matched:
            seconds = float(matched.group(1))
            return {
                "retry-after": str(math.ceil(seconds)),
                "retry-after-ms": str(round(seconds * 1000)),
            }
    return {}
