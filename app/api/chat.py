"""POST /v1/chat/completions as a plain ASGI app: validate at the edge, hand the request to the
dispatcher, send its answer, and stop everything the moment the client goes away.

Plain ASGI rather than a Starlette route because this is the hot path: no Request object, no
StreamingResponse task group, no framework middleware, one `send` per relayed frame. Errors are
raised as ProxyError and rendered by RequestMiddleware, which wraps this app.
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, ClientGone, answer_client, read_body
from app.openai_types import parse_chat_request

PATH = "/v1/chat/completions"


async def _chat_completions(scope: Scope, receive: Receive, send: Send) -> None:
    try:
        body = await read_body(scope, receive)
    except ClientGone:
        return
    chat_request = parse_chat_request(body)
    await answer_client(scope, chat_request, (receive, send))


chat_completions = AsgiHandler(_chat_completions)
