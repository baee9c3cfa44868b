"""POST /v1/embeddings, routed by `model` through the same dispatch as chat (CONTRACT.md,
"Other OpenAI endpoints"): the body is checked here, then each attempt's kind turns it into
its own upstream call (app/faces/embeddings.py)."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, ClientGone, answer_client, read_body
from app.errors import InvalidRequest
from app.faces.embeddings import EmbeddingsFace
from app.openai_types import chat_request_from_wire, decode_request_body
from app.translators.base import NativeRequest
from app.translators.embeddings import dimensions, encoding

PATH = "/v1/embeddings"


async def _embeddings(scope: Scope, receive: Receive, send: Send) -> None:
    try:
        body = decode_request_body(await read_body(scope, receive), param_style="openai")
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
    await answer_client(scope, placeholder, (receive, send), face)


embeddings = AsgiHandler(_embeddings)
