"""Client keys: `Authorization: Bearer KEY` or `x-api-key: KEY` (what Anthropic's SDKs send),
matched against the configured keys (app/ops/keys.py)."""

from __future__ import annotations

from app.errors import AuthenticationFailed
from app.ops.keys import ANONYMOUS, ClientKey, KeyRing
from app.state import ProxyState


async def request_key(proxy: ProxyState, headers: dict[bytes, bytes]) -> ClientKey:
    """The key of a /v1/ request: a configured one, else (with a console) one made at run
    time; ANONYMOUS when no key exists anywhere."""
    keys, console = proxy.ops.keys, proxy.console
    runtime = console is not None and console.keys.any
    if not keys.required and not runtime:
        return ANONYMOUS
    authorization, api_key = headers.get(b"authorization"), headers.get(b"x-api-key")
    try:
        return client_key(keys, authorization, api_key)
    except AuthenticationFailed as exc:
        if console is None or exc.code == "missing_api_key":
            raise
        presented = api_key if api_key is not None else (authorization or b"").partition(b" ")[2]
        found: ClientKey = await console.keys.identify(presented.strip())
        return found


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
