"""POST /v1/chat/completions: validate at the edge, route, translate, relay."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from app.api.middleware import RECORD_KEY
from app.dispatch import answer
from app.openai_types import parse_chat_request
from app.state import ProxyState

STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def chat_completions(request: Request) -> Response:
    proxy: ProxyState = request.app.state.proxy
    chat_request = parse_chat_request(await request.body())
    result = await answer(proxy, chat_request, request.scope[RECORD_KEY])
    headers = {"x-toolrelay-model": result.model_name}
    if result.frames is not None:
        return RelayResponse(
            result.frames, media_type="text/event-stream", headers=headers | STREAM_HEADERS
        )
    return Response(orjson.dumps(result.completion), media_type="application/json", headers=headers)


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
