"""POST /v1/chat/completions: validate at the edge, route, translate, relay."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.errors import ProxyError
from app.openai_types import ChatRequest, parse_chat_request
from app.state import ProxyState
from app.streaming import complete, open_stream
from app.translators.base import ResponseContext, Target

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def chat_completions(request: Request) -> Response:
    proxy: ProxyState = request.app.state.proxy
    chat_request = parse_chat_request(await request.body())
    target = proxy.router.resolve(chat_request.model)
    try:
        return await _answer(proxy, chat_request, target)
    except ProxyError as error:
        error.headers["x-toolrelay-model"] = target.model_name
        raise


async def _answer(proxy: ProxyState, chat_request: ChatRequest, target: Target) -> Response:
    translator = proxy.translators[target.provider.kind]
    upstream_request = translator.build_request(chat_request, target)
    ctx = ResponseContext(
        completion_id=proxy.new_id(),
        created=int(proxy.clock()),
        model=target.model_name,
        request=chat_request,
    )
    client = proxy.upstreams.client(target.provider_name)
    headers = {"x-toolrelay-model": target.model_name}
    if upstream_request.stream:
        frames = await open_stream(
            client, upstream_request, translator, ctx, target.provider_name, proxy.redact
        )
        return RelayResponse(
            frames, media_type="text/event-stream", headers=headers | STREAM_HEADERS
        )
    completion = await complete(client, upstream_request, translator, ctx, target.provider_name)
    return Response(orjson.dumps(completion), media_type="application/json", headers=headers)


class RelayResponse(StreamingResponse):
    """A StreamingResponse that closes its relay however the response ends. Starlette only
    cancels the sending task when the client goes away; a relay suspended at a `yield` would
    otherwise hold its upstream connection until garbage collection."""

    body_iterator: AsyncGenerator[bytes, None]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.body_iterator.aclose()
