"""Every other `/v1/` path (moderations, audio, images, files, batches, uploads, vector
stores...) relayed to an openai-kind upstream as plain ASGI: the body read only as far as its
`model`, then both bodies streamed chunk by chunk, so a 100 MB upload or download never sits
whole in the proxy. Its route (registered last, and imported at start-up where this module
is not) is app/api/passthrough_route.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, DisconnectWatcher
from app.api.middleware import RECORD_KEY
from app.errors import ProxyError
from app.ops.metrics import NONE
from app.relay.httpx_client import close_response, httpx_timeout, transport_error
from app.relay.passthrough import (
    PassthroughRequest,
    client_headers,
    open_upstream,
    upstream_headers,
    upstream_url,
)
from app.relay.request_body import BodyHead, ClientBody, ClientGone, read_head
from app.request_record import RequestRecord
from app.routing.passthrough import PassthroughTarget, passthrough_target
from app.state import ProxyState


async def _passthrough(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    record: RequestRecord = scope[RECORD_KEY]
    body = ClientBody(receive)
    try:
        head = await read_head(body, _header(scope, b"content-type"))
    except ClientGone:
        return
    where = f"{scope['method']} {scope['path']}"
    target = await passthrough_target(proxy, head.model, record, where)
    request = _upstream_request(scope, body, head, target)
    response = await _send_upstream(proxy, request, target, body, record)
    if response is None:
        return
    # Once the whole body is in, a disconnect can only come from the client leaving: stop
    # then. (While it streams, reading it is how a disconnect shows.)
    watcher = DisconnectWatcher(receive) if body.complete else None
    try:
        await _relay(response, send, target, record, watcher)
    except asyncio.CancelledError:
        if watcher is None or not watcher.cancelled_us():
            raise
    finally:
        if watcher is not None:
            watcher.stop()
        await close_response(response)


async def _send_upstream(
    proxy: ProxyState,
    request: PassthroughRequest,
    target: PassthroughTarget,
    body: ClientBody,
    record: RequestRecord,
) -> httpx.Response | None:
    """The upstream's answer, once its headers came (the caller closes it), the attempt
    noted on the record; None when the client left mid-upload: nobody is left to answer."""
    client = proxy.upstreams.passthrough_client(target.provider_name)
    timeout = httpx_timeout(proxy.upstreams.limits(target.deployment_key, target.timeouts).answer)
    asked = record.clock()
    try:
        response = await open_upstream(client, request, target.provider_name, timeout)
    except ClientGone:
        return None
    except ProxyError as failure:
        if body.gone:
            return None
        record.tried(target.deployment_key, failure.status)
        _count_upstream_error(proxy, target, failure.status)
        raise
    record.waited_since(asked)
    record.tried(target.deployment_key, response.status_code)
    if response.status_code >= 400:
        _count_upstream_error(proxy, target, response.status_code)
    return response


def _upstream_request(
    scope: Scope, body: ClientBody, head: BodyHead, target: PassthroughTarget
) -> PassthroughRequest:
    """The client's request with the upstream model in its body, the provider's key in its
    headers, and what is left of its body still to stream."""
    sent_head = head.with_model(target.upstream_model)
    content: bytes | AsyncIterator[bytes]
    if body.complete:
        content, length = sent_head, None  # whole: the client library counts it
    else:
        content, length = body.rest(sent_head), _streamed_length(scope, head, sent_head)
    url = upstream_url(
        target.provider.base_url,
        scope.get("raw_path") or scope["path"].encode(),
        scope["query_string"],
    )
    headers = upstream_headers(scope["headers"], target.provider, length)
    return PassthroughRequest(scope["method"], url, headers, content)


def _streamed_length(scope: Scope, head: BodyHead, sent_head: bytes) -> int | None:
    """The client's content-length, changed by what rewriting the model changed; None when
    it sent none (then the body goes chunked, as it came)."""
    declared = _header(scope, b"content-length")
    if declared is None or not declared.isdigit():
        return None
    return int(declared) + len(sent_head) - len(head.head)


async def _relay(
    response: httpx.Response,
    send: Send,
    target: PassthroughTarget,
    record: RequestRecord,
    watcher: DisconnectWatcher | None,
) -> None:
    """The upstream's status, headers and body as they came, raw (compressed stays
    compressed, binary stays binary). A failure mid-body ends the response unfinished, so the
    client sees a cut-short body, not a complete wrong one."""
    headers = client_headers(response.headers)
    if target.model_name is not None:
        headers.append((b"x-toolrelay-model", target.model_name.encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    try:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx.HTTPError as exc:
        failure = transport_error(exc, target.provider_name)
        record.stream_error = failure.status
        record.failed(failure)
        return
    if watcher is not None:
        watcher.stop()  # the server reports the end of a response as a disconnect too
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _count_upstream_error(proxy: ProxyState, target: PassthroughTarget, status: int) -> None:
    model = target.model_name or NONE
    proxy.ops.metrics.upstream_errors.labels(model, target.provider_name, str(status)).inc()


def _header(scope: Scope, name: bytes) -> bytes | None:
    for header, value in scope["headers"]:
        if header == name:
            return bytes(value)
    return None


passthrough = AsgiHandler(_passthrough)
