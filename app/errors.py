"""Typed proxy errors, classified once where they arise and rendered in OpenAI's error shape."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

ErrorBody = dict[str, dict[str, Any]]


class ProxyError(Exception):
    """Base of every error the proxy reports to a client.

    Carries everything the client sees (status, OpenAI `type`/`code`/`param`, extra headers)
    and whether a router may retry it, so nothing downstream re-classifies by message text.
    """

    status: int = 500
    type: str = "api_error"
    code: str | None = None
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        self.headers: dict[str, str] = dict(headers or {})

    def body(self) -> ErrorBody:
        return error_body(self.message, self.type, self.param, self.code)


class InvalidRequest(ProxyError):
    status = 400
    type = "invalid_request_error"


class RequestTooLarge(InvalidRequest):
    """A client's body past `server.max_body_mb`: refused as soon as the limit is passed (or
    announced by Content-Length), so an oversized body is never held in memory."""

    status = 413
    code = "request_too_large"

    def __init__(self, limit_mb: float) -> None:
        super().__init__(
            f"The request body is larger than the proxy's limit of {limit_mb:g} MB "
            "(server.max_body_mb)."
        )


class AuthenticationFailed(ProxyError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class ModelNotFound(ProxyError):
    status = 404
    type = "invalid_request_error"
    code = "model_not_found"


class ModelNotAllowed(ProxyError):
    """The client's key may not use the model (its `models` allow-list)."""

    status = 403
    type = "permission_error"
    code = "model_not_allowed"


class RateLimited(ProxyError):
    """One of the proxy's own limits (a key's or a model's) is used up. `type` is OpenAI's
    for its own rate limits: `requests` or `tokens`."""

    status = 429
    code = "rate_limit_exceeded"

    def __init__(self, message: str, *, tokens: bool, retry_after: int) -> None:
        super().__init__(message, headers={"retry-after": str(retry_after)})
        self.type = "tokens" if tokens else "requests"


class BudgetExceeded(ProxyError):
    """A budget (a key's, its team's or a model's) cannot hold the request's worst-case cost:
    refused before anything goes upstream. `retry_after` None: a `total` budget, which never
    resets. `type` is OpenAI's for an exhausted quota."""

    status = 429
    type = "insufficient_quota"
    code = "budget_exceeded"

    def __init__(self, message: str, *, retry_after: int | None) -> None:
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        super().__init__(message, headers=headers)


class ModelNotPriced(ProxyError):
    """A budget applies to the request, but its model has no price to count it by (and
    `server.spend.unpriced` is `refuse`): counting it as free would let the budget never
    trigger."""

    status = 403
    type = "permission_error"
    code = "model_not_priced"


class StoreUnavailable(ProxyError):
    """The store limits are counted in cannot be reached and `on_error: closed` says to refuse
    rather than serve uncounted."""

    status = 503
    type = "api_error"
    code = "store_unavailable"


class RouteNotFound(ProxyError):
    """Starlette's own 404/405, re-shaped so every answer follows the OpenAI error contract."""

    type = "invalid_request_error"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class UpstreamError(ProxyError):
    """Anything the upstream did wrong, or that happened on the way to it."""


class UpstreamStatusError(UpstreamError):
    """An upstream HTTP error answer, passed on with its status and message."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, param=param, code=code, headers=headers)
        self.status = status if 400 <= status < 500 else 502
        self.upstream_status = status
        self.type = type or default_error_type(self.status)
        self.retryable = status in RETRYABLE_STATUSES


class UpstreamAuthFailed(UpstreamError):
    """The upstream refused ToolRelay's own credentials (its 401 or 403, or credentials that
    could not be had): a 502, so the client never takes it for a refusal of its own key.
    Not retryable: the same credentials would be refused again."""

    status = 502
    type = "api_error"
    code = "upstream_auth_failed"


class UpstreamUnavailable(UpstreamError):
    status = 502
    type = "api_error"
    code = "upstream_unavailable"
    retryable = True


class UpstreamTimeout(UpstreamError):
    status = 504
    type = "timeout_error"
    code = "upstream_timeout"
    retryable = True


class UpstreamProtocolError(UpstreamError):
    """The upstream answered, but not in a shape its kind allows (bad JSON, a cut-short stream)."""

    status = 502
    type = "api_error"
    code = "upstream_protocol_error"


class UpstreamStreamError(UpstreamError):
    """An error the upstream reported inside a stream that had already started (HTTP 200)."""

    status = 502

    def __init__(self, message: str, *, type: str = "api_error", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.type = type


class InvalidToolCall(UpstreamError):
    """The model called a tool in a way the client's definition forbids (arguments that are
    not JSON or break the schema, or a tool never offered), and the model's `on_invalid`
    policy refuses such calls. 502: the upstream's answer is what is wrong."""

    status = 502
    type = "api_error"
    code = "invalid_tool_call"
    deployment: str | None = None
    """The deployment whose answer it was (set by dispatch): on_invalid `fallback` asks
    another one."""


RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})

_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def default_error_type(status: int) -> str:
    return _TYPE_BY_STATUS.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(message: str, type: str, param: str | None, code: str | None) -> ErrorBody:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_json(error: ProxyError, redact: Callable[[str], str] | None = None) -> bytes:
    """The error body as sent. Every string field is redacted, not just the message: an
    upstream may echo a key back in `param` or `code` as well."""
    body = error.body()
    if redact is not None:
        body["error"] = {
            k: redact(v) if isinstance(v, str) else v for k, v in body["error"].items()
        }
    return orjson.dumps(body)


def log_exception(logger: logging.Logger, redact: Callable[[str], str], message: str) -> None:
    """Logs the exception being handled with its traceback, secrets removed: an exception's
    text may quote a header or key, and logs travel further than responses."""
    logger.error("%s\n%s", message, redact(traceback.format_exc()).rstrip())


class Redactor:
    """Removes configured secrets from any text: the second line of defence behind never
    putting them there, applied to every error message and log record we produce."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a key that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "<redacted>")
        return text
