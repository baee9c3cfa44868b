"""The HTTP side of a passed-through request, as an HTTP proxy does it: the upstream URL, the
headers each way (hop-by-hop ones dropped, the client's key replaced by the provider's), and
the request sent with its body still streaming."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import httpx

from app.config import ProviderConfig
from app.relay.httpx_client import transport_error

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
"""RFC 9110 7.6.1: meant for one connection, never forwarded (nor any `proxy-*`)."""
NOT_TO_UPSTREAM = HOP_BY_HOP | {
    b"host",  # the upstream's, set by the client library
    b"content-length",  # recomputed: the body may have changed size
    b"expect",  # 100-continue was the server's business with the client
    b"authorization",  # the client's key for the proxy, never the upstream's
    b"x-api-key",
    b"cookie",
}
NOT_TO_CLIENT = HOP_BY_HOP | {
    b"date",  # the server adds its own
    b"server",
    b"set-cookie",  # the proxy is shared: no upstream cookie rides along to a client
    b"x-request-id",  # ours names the request; the upstream's goes as x-upstream-request-id
}

Headers = list[tuple[bytes, bytes]]


def upstream_url(base_url: str, raw_path: bytes, query: bytes) -> str:
    """The provider's base URL (ending in /v1) and the path after /v1, query kept, its
    percent-encoding as the client sent it."""
    rest = raw_path.decode("latin-1").removeprefix("/v1")
    url = f"{base_url}{rest}"
    return f"{url}?{query.decode('latin-1')}" if query else url


def upstream_headers(
    client_headers: Iterable[tuple[bytes, bytes]],
    provider: ProviderConfig,
    content_length: int | None,
) -> Headers:
    """The client's end-to-end headers, then the provider's configured ones and its key."""
    dropped = _connection_tokens(client_headers)
    headers = [
        (name, value)
        for name, value in client_headers
        if name not in NOT_TO_UPSTREAM and name not in dropped and not name.startswith(b"proxy-")
    ]
    if not any(name == b"accept-encoding" for name, _ in headers):
        # The answer is relayed raw: without this the client library would ask for gzip on
        # the client's behalf, and a client that never asked (curl) would get it.
        headers.append((b"accept-encoding", b"identity"))
    configured = {name.lower().encode() for name in provider.headers}
    headers = [(name, value) for name, value in headers if name not in configured]
    headers += [(name.lower().encode(), value.encode()) for name, value in provider.headers.items()]
    if provider.api_key:
        headers.append((b"authorization", f"Bearer {provider.api_key}".encode()))
    if content_length is not None:
        headers.append((b"content-length", str(content_length).encode()))
    return headers


def client_headers(upstream: httpx.Headers) -> Headers:
    """The upstream's answer headers for the client, lower-cased as ASGI wants them;
    content-length and content-encoding kept, since the body is relayed raw."""
    raw = [(name.lower(), value) for name, value in upstream.raw]
    dropped = _connection_tokens(raw)
    headers = []
    for name, value in raw:
        if name == b"x-request-id":
            headers.append((b"x-upstream-request-id", value))
        elif name not in NOT_TO_CLIENT and name not in dropped and not name.startswith(b"proxy-"):
            headers.append((name, value))
    return headers


def _connection_tokens(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    """Headers the sender named in `Connection` are hop-by-hop too."""
    return {
        token.strip().lower()
        for name, value in headers
        if name == b"connection"
        for token in value.split(b",")
    }


async def open_upstream(
    client: httpx.AsyncClient,
    request: PassthroughRequest,
    provider_name: str,
    timeout: httpx.Timeout,
) -> httpx.Response:
    """Sends the request (its body streaming from the client) and returns at the upstream's
    headers; the caller closes the response. Network failures become 502/504 ProxyErrors."""
    upstream_request = client.build_request(
        request.method,
        request.url,
        content=request.content,
        headers=request.headers,
        timeout=timeout,
    )
    try:
        return await client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        raise transport_error(exc, provider_name) from None


class PassthroughRequest:
    """What goes upstream: `content` is the whole body (bytes) or a stream of it."""

    __slots__ = ("content", "headers", "method", "url")

    def __init__(
        self, method: str, url: str, headers: Headers, content: bytes | AsyncIterator[bytes]
    ) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.content = content
