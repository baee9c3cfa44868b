"""Client keys: `Authorization: Bearer KEY`, compared in constant time."""

from __future__ import annotations

import hmac

from app.errors import AuthenticationFailed


def check_client_key(authorization: bytes | None, keys: list[bytes]) -> None:
    """Raises unless the header carries one of the keys. Every key is compared, whether or not
    an earlier one matched, so timing does not tell which or how much of a key was right."""
    if authorization is None:
        raise AuthenticationFailed(
            "Missing API key: send 'Authorization: Bearer YOUR_KEY'.", code="missing_api_key"
        )
    scheme, _, presented = authorization.partition(b" ")
    presented = presented.strip()
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented, key)
    if scheme.lower() != b"bearer" or not matched:
        raise AuthenticationFailed("Incorrect API key provided.")
