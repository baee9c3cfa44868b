"""Client keys: `Authorization: Bearer KEY` or `x-api-key: KEY` (what Anthropic's SDKs send),
compared in constant time."""

from __future__ import annotations

import hmac

from app.errors import AuthenticationFailed


def check_client_key(
    authorization: bytes | None, keys: list[bytes], api_key: bytes | None = None
) -> None:
    """Raises unless a header carries one of the keys (`x-api-key` when sent, else the bearer
    token). Every key is compared, whether or not an earlier one matched, so timing does not
    tell which or how much of a key was right."""
    if api_key is not None:
        scheme, presented = b"bearer", api_key.strip()
    elif authorization is None:
        raise AuthenticationFailed(
            "Missing API key: send 'Authorization: Bearer YOUR_KEY' or 'x-api-key: YOUR_KEY'.",
            code="missing_api_key",
        )
    else:
        scheme, _, presented = authorization.partition(b" ")
        presented = presented.strip()
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented, key)
    if scheme.lower() != b"bearer" or not matched:
        raise AuthenticationFailed("Incorrect API key provided.")
