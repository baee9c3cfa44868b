"""POST /v1/embeddings, routed by `model` through the same dispatch as chat (CONTRACT.md,
"Other OpenAI endpoints"): the body is checked here, then each attempt's kind turns it into
its own upstream call (app/faces/embeddings.py)."""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, ClientGone, DisconnectWatcher, read_body, send_answer
from app.api.middleware import RECORD_KEY
from app.errors import InvalidRequest
from app.faces.embeddings import EmbeddingsFace
from app.openai_types import chat_request_from_wire, decode_request_body
from app.routing.dispatch import answer
from app.state import ProxyState
from app.translators.base import NativeRequest
from app.translators.embeddings import dimensions, encoding

PATH = "/v1/embeddings"


async def _embeddings(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = decode_request_body(await read_body(receive), param_style="openai")
    except ClientGone:
        return
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    if body.get("input") in (None, "", []):
        raise InvalidRequest("input: Field required (a string or a list)", param="input")
    encoding(body)
    dimensions(body)
    placeholder = chat_request_from_wire(
        {"model": model, "messages": [{"role": "user", "content": ""}]}
    )
    face = EmbeddingsFace(NativeRequest(PATH, body, {}))
    watcher = DisconnectWatcher(receive)
    try:
        result = await answer(proxy, placeholder, scope[RECORD_KEY], face)
        await send_answer(result, send, watcher)
    except asyncio.CancelledError:
        if not watcher.cancelled_us():
            raise
    finally:
        watcher.stop()


embeddings = AsgiHandler(_embeddings)
