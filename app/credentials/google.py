"""Google OAuth2 access tokens for Vertex AI providers, from a service-account key file or
Google's application default credentials.

google-auth does the protocol (the RS256 JWT assertion, the exchange at the key file's own
`token_uri`, ADC's search order, the metadata server); this module decides when it runs. A
token is cached and reused until `REFRESH_MARGIN` before it expires, so a request never waits
on Google except for the one refresh per token lifetime; that refresh is one at a time
however many requests wait for it (one shared asyncio task), and runs in a worker thread
because google-auth's transport blocks. Failures become typed errors that name the provider and
never carry a key, a token or a key file's content."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import math
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import google.auth
import google.auth.credentials
import google.auth.exceptions
import google.auth.transport.requests
from google.oauth2 import service_account

from app.credentials import CredentialsUnavailable
from app.errors import AuthenticationFailed
from app.translators.base import UpstreamRequest

logger = logging.getLogger("toolrelay.credentials")

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
"""The scope Vertex AI needs (CONTRACT.md's table: OAuth2, scope `cloud-platform`)."""

REFRESH_MARGIN = 300.0
"""Seconds before its expiry that a token is replaced: a request that starts with it must not
reach Google after it expired, and a refresh that fails leaves time to try again."""

RETRY_AFTER_FAILURE = 30.0
"""After a failed refresh while the old token is still good: seconds until the next try, so
requests in the meantime use the old token rather than each waiting on a failing endpoint."""

MIN_TOKEN_LEFT = 60.0
"""A token with less left than this is not used after a failed refresh: the request would
likely reach Google after it expired."""

UNKNOWN_LIFETIME = 3600.0
"""An answer without `expires_in`: Google's access tokens live an hour."""

TOKEN_TIMEOUT = 30.0
"""Seconds for one call to the token endpoint (google-auth's requests transport defaults to
120, long past any client's patience)."""

ERROR_CODE = re.compile(r"[a-z_]{1,40}")
"""An OAuth2 `error` code (RFC 6749 §5.2: `invalid_grant`...), safe to repeat in a message."""


def load_google_credentials(provider: str, path: str | None) -> google.auth.credentials.Credentials:
    """The provider's google-auth credentials: the key file at `path`, or with none, ADC.
    Blocking (ADC may ask the metadata server), so called once at start-up. Raises
    CredentialsUnavailable."""
    if path:
        return key_file_credentials(provider, path)
    try:
        credentials, _project = google.auth.default(scopes=[CLOUD_PLATFORM])
    except google.auth.exceptions.GoogleAuthError:
        # its message may quote the file GOOGLE_APPLICATION_CREDENTIALS names: not repeated
        raise CredentialsUnavailable(provider, adc_missing()) from None
    return credentials


def key_file_credentials(provider: str, path: str) -> google.auth.credentials.Credentials:
    """A service-account key file's credentials; google-auth takes the file's own
    `token_uri` as the token endpoint (service_account.Credentials.from_service_account_info)."""
    try:
        return service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call,no-any-return]
            path, scopes=[CLOUD_PLATFORM]
        )
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise CredentialsUnavailable(
            provider, f"cannot read the key file '{path}' ({reason})"
        ) from None
    except (
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
        google.auth.exceptions.GoogleAuthError,
    ):
        # google-auth's own messages can quote the file (a bad `type`): none is repeated.
        raise CredentialsUnavailable(
            provider,
            f"the key file '{path}' is not a Google service-account key "
            "(JSON with client_email, private_key and token_uri)",
        ) from None


def adc_missing() -> str:
    """Why ADC failed, saying where it looked without repeating google-auth's message."""
    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        return f"GOOGLE_APPLICATION_CREDENTIALS names '{named}', which is not a usable key file"
    return (
        "no key file is configured (`credentials`) and Google's application default "
        "credentials were not found"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Fresh:
    """One refreshed token and how long it lives, measured as it arrived."""

    token: str
    lifetime: float


class GoogleTokens:
    """A Vertex provider's `Credentials`: a cached OAuth2 access token as a Bearer header.

    `clock` (seconds, monotonic) is injected so tests can age a token without waiting."""

    def __init__(
        self,
        provider: str,
        credentials: google.auth.credentials.Credentials,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._provider = provider
        self._google = credentials
        self._http = google.auth.transport.requests.Request()
        self._transport = functools.partial(self._http, timeout=TOKEN_TIMEOUT)
        self._clock = clock
        self._refreshing: asyncio.Task[str] | None = None
        self._token: str | None = None
        self._renew_at = -math.inf
        self._expires_at = -math.inf

    @classmethod
    def load(cls, provider: str, path: str | None, **options: Any) -> GoogleTokens:
        """From a provider's `credentials` setting (a key file, or empty for ADC). Raises
        CredentialsUnavailable, with a one-line message naming the provider."""
        return cls(provider, load_google_credentials(provider, path), **options)

    async def apply(self, request: UpstreamRequest) -> UpstreamRequest:
        """The request with `authorization: Bearer TOKEN`, unless the provider's configured
        headers already hold one: a configured header is deliberate (app/translators/base.py
        `provider_headers`)."""
        if any(name.lower() == "authorization" for name in request.headers):
            return request
        token = await self.token()
        headers = {**request.headers, "authorization": f"Bearer {token}"}
        return dataclasses.replace(request, headers=headers)

    async def token(self) -> str:
        """The cached token while it has more than REFRESH_MARGIN left, else a fresh one.
        Raises AuthenticationFailed (401) when none can be had."""
        token = self._token
        if token is not None and self._clock() < self._renew_at:
            return token
        return await self._refresh_once()

    async def _refresh_once(self) -> str:
        """One refresh at a time, as a task of its own that every request arriving meanwhile
        awaits: they share its token or its failure (rather than each trying again in turn
        against a failing endpoint), and a waiter that gives up (its client left) cancels
        only its wait, never the refresh the others wait on."""
        if self._refreshing is None:
            self._refreshing = asyncio.create_task(self._refresh())
            # retrieved even if every waiter left, so asyncio never logs it as unhandled
            self._refreshing.add_done_callback(_retrieve)
        return await asyncio.shield(self._refreshing)

    async def _refresh(self) -> str:
        try:
            fresh = await asyncio.to_thread(self._fetch)
        except AuthenticationFailed as error:
            return self._after_failure(error)
        finally:
            self._refreshing = None
        now = self._clock()
        self._token = fresh.token
        self._expires_at = now + fresh.lifetime
        self._renew_at = self._expires_at - REFRESH_MARGIN
        return fresh.token

    def _after_failure(self, error: AuthenticationFailed) -> str:
        """The old token while it is still good for a while (tried again later), else the
        failure, for every request that waited on this refresh."""
        logger.warning("%s", error.message)
        now = self._clock()
        if self._token is not None and self._expires_at - now > MIN_TOKEN_LEFT:
            self._renew_at = min(now + RETRY_AFTER_FAILURE, self._expires_at - MIN_TOKEN_LEFT)
            return self._token
        self._token = None
        raise error

    def _fetch(self) -> _Fresh:
        """google-auth's refresh, in a worker thread (it blocks on HTTP)."""
        try:
            self._google.refresh(self._transport)  # type: ignore[no-untyped-call]
        except Exception as error:  # whatever broke, the request gets a 401 naming the provider
            raise AuthenticationFailed(
                f"The provider '{self._provider}' could not get a Google access token: "
                f"{refusal_reason(error)}."
            ) from None
        token, expiry = self._google.token, self._google.expiry
        if not isinstance(token, str) or not token:
            raise AuthenticationFailed(
                f"The provider '{self._provider}' could not get a Google access token: "
                "the token endpoint's answer held none."
            )
        if expiry is None:
            return _Fresh(token, UNKNOWN_LIFETIME)
        # google-auth's expiry is a naive UTC datetime (its _helpers.utcnow() + expires_in).
        now = datetime.now(UTC).replace(tzinfo=None)
        return _Fresh(token, (expiry - now).total_seconds())

    def close(self) -> None:
        """Closes the token endpoint's connection pool (at shutdown)."""
        self._http.session.close()


def _retrieve(task: asyncio.Task[str]) -> None:
    if not task.cancelled():
        task.exception()


def refusal_reason(error: Exception) -> str:
    """What went wrong, in words safe for a client: the OAuth2 error code when the endpoint
    sent one, never its whole answer or google-auth's message (which may quote it)."""
    if isinstance(error, google.auth.exceptions.RefreshError):
        # google-auth raises RefreshError(message, the endpoint's decoded JSON answer).
        answer = error.args[1] if len(error.args) > 1 else None
        code = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(code, str) and ERROR_CODE.fullmatch(code):
            return f"the token endpoint refused the credentials ({code})"
        return "the token endpoint refused the credentials"
    if isinstance(error, google.auth.exceptions.TransportError):
        return "the token endpoint could not be reached"
    return f"the token endpoint's answer could not be used ({type(error).__name__})"
