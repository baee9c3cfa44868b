"""Client keys: `Authorization: Bearer KEY` or `x-api-key: KEY` (what Anthropic's SDKs send),
matched against the configured keys (app/ops/keys.py)."""

from __future__ import annotations

from app.errors import AuthenticationFailed
from app.ops.keys import ClientKey, KeyRing


def client_key(keys: KeyRing, authorization: bytes | None, api_key: bytes | None) -> ClientKey:
    """The key a request presents: `x-api-key` when sent, else the bearer token."""
    if api_key is not None:
        return keys.identify(api_key.strip())
    if authorization is None:
        raise AuthenticationFailed(
            "Missing API key: send 'Authorization: Bearer YOUR_KEY' or 'x-api-key: YOUR_KEY'.",
            code="missing_api_key",
        )
    scheme, _, presented = authorization.partition(b" ")
    if scheme.lower() != b"bearer":
        raise AuthenticationFailed("Incorrect API key provided.")
    return keys.identify(presented.strip())
