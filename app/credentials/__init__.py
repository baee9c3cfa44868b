"""Where an upstream's auth comes from when it is not a static header: tokens that expire and
are refreshed (Google's OAuth2), signatures made per request (AWS SigV4). This is I/O with
caches, so it lives here and not in translators, which stay pure: the relay applies a
provider's `Credentials` to the translator's `UpstreamRequest` just before sending it.

A provider whose credentials cannot be loaded is reported once at start-up
(`CredentialsUnavailable`) and gets `Unavailable` in their place, so its requests answer 401
naming it while the rest of the server runs (CONTRACT.md, "Cloud kinds")."""

from __future__ import annotations

from typing import Protocol

from app.errors import AuthenticationFailed
from app.translators.base import UpstreamRequest


class Credentials(Protocol):
    """An upstream's auth, applied to each request just before it is sent."""

    async def apply(self, request: UpstreamRequest) -> UpstreamRequest:
        """The request as it must go out (a copy: UpstreamRequest is frozen), with its auth
        header or signature added. Raises AuthenticationFailed when no auth can be had."""
        ...


class CredentialsUnavailable(Exception):
    """A provider's credentials could not be loaded at start-up (a missing or garbled key
    file, no application default credentials). The message is one line naming the provider
    and what was wrong, never a secret: start-up prints it as it is."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"The provider '{provider}' has no usable credentials: {reason}.")
        self.provider = provider
        self.message = str(self)


class Unavailable:
    """The credentials of a provider whose own could not be loaded: every request answers
    401 naming the provider, rather than failing somewhere less clear."""

    def __init__(self, error: CredentialsUnavailable) -> None:
        # The reason (a file path, what google-auth said) is the operator's: start-up logged
        # it; a client is told only which provider and where to look.
        self._message = (
            f"The provider '{error.provider}' has no usable credentials "
            "(the proxy's start-up log says why)."
        )

    async def apply(self, request: UpstreamRequest) -> UpstreamRequest:
        raise AuthenticationFailed(self._message)


__all__ = ["Credentials", "CredentialsUnavailable", "Unavailable"]
