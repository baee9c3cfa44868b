"""Each configured provider's credentials, for the kinds whose auth is not a static header
(Vertex AI's OAuth2 tokens, Bedrock's SigV4), built once at start-up. A provider whose
credentials cannot be loaded is reported once, and its requests answer 401 naming it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.config import Config, ProviderConfig
from app.credentials import Credentials, CredentialsUnavailable, Unavailable

logger = logging.getLogger("toolrelay")


def _google(name: str, provider: ProviderConfig) -> Credentials:
    # Imported here, as in _aws: a config without the kind never loads google-auth (botocore).
    from app.credentials.google import GoogleTokens  # noqa: PLC0415

    return GoogleTokens.load(name, provider.credentials or None)


def _aws(name: str, provider: ProviderConfig) -> Credentials | None:
    """SigV4, unless the provider has a Bedrock API key (sent as a Bearer token)."""
    if provider.api_key is not None:
        return None
    assert provider.region is not None  # the config requires one for bedrock
    from app.credentials.aws import AwsSigner  # noqa: PLC0415

    return AwsSigner.load(name, provider.region)


SOURCES: dict[str, Callable[[str, ProviderConfig], Credentials | None]] = {
    "vertex": _google,
    "bedrock": _aws,
}
"""By kind: where a provider of that kind gets its credentials (None: a static header)."""


def credential_setting(name: str, provider: ProviderConfig) -> str:
    """The setting an operator fixes when the upstream refuses this provider's credentials:
    its `api_key` when it has one, else where its kind's credentials come from."""
    if provider.api_key is None and provider.kind == "vertex":
        return f"providers.{name}.credentials (or Google's application default credentials)"
    if provider.api_key is None and provider.kind == "bedrock":
        return f"the AWS credential chain (or providers.{name}.api_key)"
    return f"providers.{name}.api_key"


def provider_credentials(config: Config) -> dict[str, Credentials]:
    found: dict[str, Credentials] = {}
    for name, provider in config.providers.items():
        source = SOURCES.get(provider.kind)
        if source is None:
            continue
        try:
            credentials = source(name, provider)
        except CredentialsUnavailable as error:
            logger.warning("%s Its requests will be answered with 401.", error.message)
            credentials = Unavailable(error)
        if credentials is not None:
            found[name] = credentials
    return found
