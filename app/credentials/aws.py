"""AWS SigV4 for Bedrock (CONTRACT.md, "Cloud kinds"): botocore's credential chain
(environment, shared config and AWS_PROFILE, web identity, container and instance roles, each
refreshed before it expires) and botocore's signer. Both are AWS's solved problems; only
botocore's HTTP client is not used (the relay's stays the one client).

The path is signed as it is sent: the model id is one percent-encoded segment (`%3A`), and
SigV4's canonical path encodes it again (`%253A`), which botocore's signer does for a
non-S3 service. A request that already carries `Authorization` (a Bedrock API key, sent as a
Bearer token by the translator) is left as it is."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from app.credentials import CredentialsUnavailable
from app.errors import AuthenticationFailed
from app.translators.base import UpstreamRequest

SERVICE = "bedrock"  # the signing name; the endpoint's is bedrock-runtime


class AwsSigner:
    """A Bedrock provider's `Credentials`: each request signed with SigV4 for its region."""

    def __init__(self, provider: str, credentials: Any, region: str) -> None:
        self._provider = provider
        self._credentials = credentials
        self._region = region
        self._refreshing = asyncio.Lock()

    @classmethod
    def load(cls, provider: str, region: str) -> AwsSigner:
        """Raises CredentialsUnavailable when the chain finds none (a one-line reason)."""
        try:
            found = botocore.session.Session().get_credentials()
        except Exception as error:  # a broken profile or config file: reported at start-up
            reason = f"the AWS credential chain failed ({type(error).__name__})"
            raise CredentialsUnavailable(provider, reason) from None
        if found is None:
            reason = (
                "no AWS credentials found (environment, AWS_PROFILE, web identity or an "
                "instance role), and no api_key"
            )
            raise CredentialsUnavailable(provider, reason)
        return cls(provider, found, region)

    async def apply(self, request: UpstreamRequest) -> UpstreamRequest:
        if any(name.lower() == "authorization" for name in request.headers):
            return request
        frozen = await self._frozen()
        signed = AWSRequest(
            method="POST", url=request.url, data=request.body, headers=request.headers
        )
        SigV4Auth(frozen, SERVICE, self._region).add_auth(signed)
        return dataclasses.replace(request, headers=dict(signed.headers.items()))

    async def _frozen(self) -> Any:
        """The credentials now; one refresh at a time, off the event loop (botocore's refresh
        blocks on the network), when they are about to expire."""
        credentials = self._credentials
        refresh_needed = getattr(credentials, "refresh_needed", None)
        if refresh_needed is None or not refresh_needed():
            return credentials.get_frozen_credentials()
        async with self._refreshing:
            try:
                return await asyncio.to_thread(credentials.get_frozen_credentials)
            except Exception:
                raise AuthenticationFailed(
                    f"The provider '{self._provider}' could not refresh its AWS credentials."
                ) from None
