"""Bedrock's errors -> ProxyErrors: HTTP error answers (`x-amzn-errortype` and a `{"message"}`
body) and the `exception` frames of a Converse stream (PROTOCOLS H.1, CONTRACT "Cloud kinds").

The error names and statuses are botocore's (`bedrock-runtime` service model: Converse's
errors and ConverseStreamOutput's exception members). Client-side ones keep their status;
every other failure, whatever Bedrock's status, is an upstream 5xx (502 to the client,
retryable). Bedrock's message is kept (it names the field at fault; redaction happens later).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from app.errors import ProxyError, UpstreamStatusError
from app.translators.base import retry_headers

# Error name (as in `x-amzn-errortype`, or an exception frame's type with its first letter
# upper-cased) -> (status, OpenAI error type). ModelNotReadyException is botocore's 429: the
# model is loading and the SDK retries it, so the router may too.
ERRORS: dict[str, tuple[int, str]] = {
    "ThrottlingException": (429, "rate_limit_error"),
    "ModelNotReadyException": (429, "rate_limit_error"),
    "ValidationException": (400, "invalid_request_error"),
    "AccessDeniedException": (403, "permission_error"),
    "UnrecognizedClientException": (403, "permission_error"),
    # AWS's common auth errors: a signature for the wrong region, secret or clock.
    "InvalidSignatureException": (403, "permission_error"),
    "IncompleteSignatureException": (403, "permission_error"),
    "MissingAuthenticationTokenException": (403, "permission_error"),
    "ResourceNotFoundException": (404, "not_found_error"),
}
# Any other failure: a status that makes UpstreamStatusError a retryable 502.
_UPSTREAM_FAILURE = 502


def parse_error(status: int, body: bytes, headers: Mapping[str, str]) -> ProxyError:
    """An HTTP error answer. The type is the part of `x-amzn-errortype` before ':' (after it,
    AWS may add a URL); a body `__type` stands in when the header is missing."""
    bedrock_error = _error_body(body)
    name = _header(headers, "x-amzn-errortype").partition(":")[0].strip()
    if not name and isinstance(bedrock_error.get("__type"), str):
        name = bedrock_error["__type"].rpartition("#")[2].partition(":")[0]
    message = _message(bedrock_error, f"the bedrock upstream answered HTTP {status}")
    known = ERRORS.get(name)
    if known is not None:
        status, error_type = known
        return UpstreamStatusError(
            status, message, type=error_type, code=name, headers=retry_headers(headers)
        )
    upstream_status = status if status >= 500 else _UPSTREAM_FAILURE
    return UpstreamStatusError(
        upstream_status, message, code=name or None, headers=retry_headers(headers)
    )


def stream_error(event_type: str, payload: str) -> ProxyError:
    """An `exception:<type>` (or `error:<code>`) frame, as the error it names with its status
    (a throttle a retryable 429). Whether the client gets that status or the one error event
    is the relay's to decide: what matters is whether anything has gone out to the client, not
    whether a chunk was made (one made in the same read as the exception has not gone out)."""
    name = event_type.partition(":")[2]
    name = name[:1].upper() + name[1:]
    message = _message(_error_body(payload.encode()), "the bedrock stream reported an error")
    status, error_type = ERRORS.get(name, (_UPSTREAM_FAILURE, "api_error"))
    return UpstreamStatusError(status, message, type=error_type, code=name or None)


def _error_body(body: bytes) -> dict[str, Any]:
    try:
        loaded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _message(bedrock_error: Mapping[str, Any], fallback: str) -> str:
    """Bedrock writes `message`; some AWS front ends write `Message`."""
    for key in ("message", "Message"):
        value = bedrock_error.get(key)
        if isinstance(value, str) and value:
            return value
    return fallback


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), "")
    return value
