"""One chat request, from a validated ChatRequest to an answer the HTTP layer can send: route,
translate, call the upstream. The HTTP layer (app/api/chat.py) knows nothing of upstreams."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from app.errors import ProxyError
from app.openai_types import ChatRequest
from app.request_record import RequestRecord
from app.state import ProxyState
from app.streaming import complete, open_stream
from app.translators.base import ResponseContext, Target


@dataclass(slots=True)
class Answer:
    """What the client gets: a whole completion, or SSE frames to relay (already committed to
    a 200: the first frame exists). `model_name` is the configured model that answered."""

    model_name: str
    completion: dict[str, Any] | None = None
    frames: AsyncGenerator[bytes, None] | None = None


async def answer(proxy: ProxyState, chat_request: ChatRequest, record: RequestRecord) -> Answer:
    """Raises ProxyError (with `x-toolrelay-model` set when a model was chosen) when there is
    no answer to send."""
    target = proxy.router.resolve(chat_request.model)
    record.model = target.model_name
    try:
        return await _attempt(proxy, chat_request, target)
    except ProxyError as error:
        error.headers["x-toolrelay-model"] = target.model_name
        raise


async def _attempt(proxy: ProxyState, chat_request: ChatRequest, target: Target) -> Answer:
    translator = proxy.translators[target.provider.kind]
    upstream_request = translator.build_request(chat_request, target)
    ctx = ResponseContext(
        completion_id=proxy.new_id(),
        created=int(proxy.clock()),
        model=target.model_name,
        request=chat_request,
    )
    client = proxy.upstreams.client(target.provider_name)
    if upstream_request.stream:
        frames = await open_stream(
            client, upstream_request, translator, ctx, target.provider_name, proxy.redact
        )
        return Answer(target.model_name, frames=frames)
    completion = await complete(client, upstream_request, translator, ctx, target.provider_name)
    return Answer(target.model_name, completion=completion)
