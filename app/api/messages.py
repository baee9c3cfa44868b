"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API in front of every
upstream (CONTRACT.md, "Anthropic Messages API"). The request becomes a chat request and goes
through the same dispatch as /v1/chat/completions, with the Messages face deciding how the
answer is put back; errors are rendered in Anthropic's shape by RequestMiddleware (by path).

A body that cannot become a chat request is not refused here: an anthropic upstream takes it
as it came. The refusal is kept and raised only if the request reaches a kind that needs the
translation."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from app.api.exchange import (
    JSON_CONTENT,
    AsgiHandler,
    ClientGone,
    Pings,
    answer_client,
    read_body,
)
from app.api.middleware import RECORD_KEY
from app.errors import InvalidRequest, ProxyError
from app.faces.messages.count import estimate_tokens
from app.faces.messages.face import MessagesFace
from app.faces.messages.request import chat_request
from app.faces.messages.thread import Thread, continued, kept, thread_of
from app.faces.messages.thread import not_found as thread_not_found
from app.openai_types import ChatRequest, chat_request_from_wire, decode_request_body
from app.ops.response_store import ResponseStore
from app.relay.streaming import complete
from app.routing.dispatch import Answer
from app.state import ProxyState
from app.translators.base import NativeRequest, ResponseContext

PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"
PING_FRAME = b'event: ping\ndata: {"type":"ping"}\n\n'
FORWARDED_HEADERS = (b"anthropic-version", b"anthropic-beta")


async def _messages(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    try:
        anthropic_body = decode_request_body(await read_body(scope, receive))
    except ClientGone:
        return
    native = _native_request(scope, PATH, anthropic_body)
    thread = thread_of(anthropic_body)
    face = MessagesFace(native)
    if thread is not None:
        record = scope[RECORD_KEY]
        whole = await _threaded(proxy, record.key.scope, anthropic_body, thread, face)
        face.save = _thread_saver(proxy.ops.responses, record.key.scope, whole)
        anthropic_body = whole
    request = _chat_request_or_refusal(anthropic_body, face)

    async def before_send(result: Answer) -> None:
        if result.completion is not None and face.save is not None and face.translated:
            await face.save(result.completion)

    pings = Pings(PING_FRAME, proxy.ping_seconds)
    await answer_client(
        scope,
        request,
        (receive, send),
        face,
        pings=pings,
        before_send=before_send,
    )


async def _threaded(
    proxy: ProxyState, key_scope: str, body: dict[str, Any], thread: Thread, face: MessagesFace
) -> dict[str, Any]:
    """The whole conversation for a translated kind. An unknown id is refused only for those:
    an anthropic upstream keeps its own threads and gets the request as it came."""
    record = None
    if thread.previous_id is not None:
        record = await proxy.ops.responses.load(key_scope, thread.previous_id)
        if record is None:
            face.refuse_translation(thread_not_found(thread.previous_id))
    return continued(body, record)


def _thread_saver(
    store: ResponseStore, key_scope: str, whole: dict[str, Any]
) -> Callable[[dict[str, Any]], Awaitable[None]]:
    async def save(message: dict[str, Any]) -> None:
        await store.save(key_scope, message["id"], kept(whole, message), [])

    return save


async def _count_tokens(scope: Scope, receive: Receive, send: Send) -> None:
    """The upstream's own count where its kind speaks the Messages API, else an estimate."""
    proxy: ProxyState = scope["app"].state.proxy
    try:
        anthropic_body = decode_request_body(await read_body(scope, receive))
    except ClientGone:
        return
    model = anthropic_body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    route = proxy.router.resolve(model)
    record = scope[RECORD_KEY]
    record.model = route.model_name
    record.key.check(route.model_name)
    deployment = proxy.balancer.pick(route, time.time(), [])
    target = deployment.target
    translator = proxy.translator(target)
    if translator.native is None:
        chat_request(anthropic_body, count_only=True)  # refuses what the answer would refuse
        counted: dict[str, Any] = {"input_tokens": estimate_tokens(anthropic_body)}
    else:
        native = translator.native(_native_request(scope, COUNT_PATH, anthropic_body))
        placeholder = _placeholder(model)
        limits = proxy.upstreams.limits(deployment.key, deployment.timeouts)
        ctx = ResponseContext(proxy.new_id(), int(proxy.clock()), route.model_name, placeholder)
        counted = await complete(
            proxy.upstreams.client(target.provider_name),
            native.build_request(placeholder, target),
            native,
            ctx,
            limits.answer,
        )
    content = orjson.dumps(counted)
    length = (b"content-length", str(len(content)).encode())
    await send({"type": "http.response.start", "status": 200, "headers": [JSON_CONTENT, length]})
    await send({"type": "http.response.body", "body": content})


def _native_request(scope: Scope, path: str, anthropic_body: dict[str, Any]) -> NativeRequest:
    query = scope.get("query_string", b"")
    headers = {
        name.decode(): value.decode()
        for name, value in scope["headers"]
        if name in FORWARDED_HEADERS
    }
    full_path = f"{path}?{query.decode()}" if query else path
    return NativeRequest(full_path, anthropic_body, headers)


def _chat_request_or_refusal(anthropic_body: dict[str, Any], face: MessagesFace) -> ChatRequest:
    """The translated request; if it cannot be translated, a placeholder that routes by the
    same model, with the refusal left with the face for kinds that need the translation."""
    try:
        return chat_request(anthropic_body)
    except ProxyError as refusal:
        model = anthropic_body.get("model")
        if not isinstance(model, str) or not model:
            raise
        face.refuse_translation(refusal)
        return _placeholder(model, stream=anthropic_body.get("stream") is True)


def _placeholder(model: str, *, stream: bool = False) -> ChatRequest:
    return chat_request_from_wire(
        {"model": model, "messages": [{"role": "user", "content": ""}], "stream": stream}
    )


messages = AsgiHandler(_messages)
count_tokens = AsgiHandler(_count_tokens)
