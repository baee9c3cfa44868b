"""Each configured provider's credentials, for the kinds whose auth is not a static header
(Vertex AI's OAuth2 tokens; AWS SigV4 next), built once at start-up. A provider whose
credentials cannot be loaded is reported once, and its requests answer 401 naming it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.config import Config, ProviderConfig
from app.credentials import Credentials, CredentialsUnavailable, Unavailable
from app.credentials.google import GoogleTokens

logger = logging.getLogger("toolrelay")


def _google(name: str, provider: ProviderConfig) -> Credentials:
    return GoogleTokens.load(name, provider.credentials or None)


SOURCES: dict[str, Callable[[str, ProviderConfig], Credentials]] = {"vertex": _google}
"""By kind: where a provider of that kind gets its credentials."""


def provider_credentials(config: Config) -> dict[str, Credentials]:
    found: dict[str, Credentials] = {}
    for name, provider in config.providers.items():
        source = SOURCES.get(provider.kind)
        if source is None:
            continue
        try:
            found[name] = source(name, provider)
        except CredentialsUnavailable as error:
            logger.warning("%s Its requests will be answered with 401.", error.message)
            found[name] = Unavailable(error)
    return found
