"""The console's errors, in the OpenAI error shape every /v1/ answer has."""

from __future__ import annotations

from app.errors import ProxyError


class ConsoleNotConfigured(ProxyError):
    status = 404
    type = "invalid_request_error"
    code = "console_not_configured"

    def __init__(self) -> None:
        super().__init__(
            "The console needs a database: set server.database "
            "(e.g. url: sqlite:///./toolrelay.db) in config.yaml."
        )


class AdminKeyMissing(ProxyError):
    status = 401
    type = "authentication_error"
    code = "missing_api_key"


class NotAdmin(ProxyError):
    status = 403
    type = "permission_error"
    code = "admin_key_required"


class Conflict(ProxyError):
    status = 409
    type = "invalid_request_error"
    code = "conflict"


class NotFound(ProxyError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"
