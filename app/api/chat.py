"""POST /v1/chat/completions as a plain ASGI app: validate at the edge, hand the request to the
dispatcher, send its answer, and stop everything the moment the client goes away.

Plain ASGI rather than a Starlette route because this is the hot path: no Request object, no
StreamingResponse task group, no framework middleware, one `send` per relayed frame. Errors are
raised as ProxyError and rendered by RequestMiddleware, which wraps this app.
"""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, ClientGone, DisconnectWatcher, read_body, send_answer
from app.api.middleware import RECORD_KEY
from app.openai_types import parse_chat_request
from app.routing.dispatch import answer
from app.state import ProxyState

PATH = "/v1/chat/completions"


async def _chat_completions(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = await read_body(receive)
    except ClientGone:
        return
    chat_request = parse_chat_request(body)
    watcher = DisconnectWatcher(receive)
    try:
        result = await answer(proxy, chat_request, scope[RECORD_KEY])
        await send_answer(result, send, watcher)
    except asyncio.CancelledError:
        if not watcher.cancelled_us():
            raise
    finally:
        watcher.stop()


chat_completions = AsgiHandler(_chat_completions)
