"""POST /v1/embeddings, routed by `model` through the same dispatch as chat (CONTRACT.md,
"Other OpenAI endpoints"): the body is checked here, then each attempt's kind turns it into
its own upstream call (app/faces/embeddings.py). A model no kind of which embeds is refused
here, before routing, which would refuse a provider without a key first (401) when no key
could make it answer."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.exchange import AsgiHandler, ClientGone, answer_client, read_body
from app.api.middleware import RECORD_KEY
from app.errors import InvalidRequest
from app.faces.embeddings import EmbeddingsFace, no_embeddings
from app.openai_types import chat_request_from_wire, decode_request_body
from app.request_record import RequestRecord
from app.state import ProxyState
from app.translators.base import NativeRequest
from app.translators.embeddings import dimensions, embedding_inputs, encoding

PATH = "/v1/embeddings"


async def _embeddings(scope: Scope, receive: Receive, send: Send) -> None:
    try:
        body = decode_request_body(await read_body(scope, receive), param_style="openai")
    except ClientGone:
        return
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    embedding_inputs(body)
    encoding(body)
    dimensions(body)
    _refuse_kinds_without_embeddings(scope["app"].state.proxy, scope[RECORD_KEY], model)
    placeholder = chat_request_from_wire(
        {"model": model, "messages": [{"role": "user", "content": ""}]}
    )
    face = EmbeddingsFace(NativeRequest(PATH, body, {}))
    await answer_client(scope, placeholder, (receive, send), face)


def _refuse_kinds_without_embeddings(proxy: ProxyState, record: RequestRecord, model: str) -> None:
    """400 when none of a model's deployments is of a kind with embeddings (once the client's
    key may use it: a model it may not use stays a 403); an unknown model is routing's 404."""
    route = proxy.router.lookup(model)
    if route is None:
        return
    targets = [deployment.target for deployment in route.deployments]
    if any(proxy.translator(target).embeddings is not None for target in targets):
        return
    record.model = route.model_name
    record.key.check(route.model_name)
    raise no_embeddings(route.model_name, targets[0].provider_name, targets[0].provider.kind)


embeddings = AsgiHandler(_embeddings)
