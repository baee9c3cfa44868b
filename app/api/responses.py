"""/v1/responses: OpenAI's Responses API in front of every upstream (CONTRACT.md, "OpenAI
Responses API"). A create request has its earlier conversation rebuilt from the store
(`previous_response_id`, `item_reference`s), becomes a chat request, and goes through the same
dispatch as chat, with the Responses face deciding how the answer is put back; the answer is
stored (unless `store: false`) before the client can read it whole. Errors are OpenAI's shape.

A model served only by `responses: native` providers gets the request as it came, stored ids
and all: the upstream keeps its own responses."""

from __future__ import annotations

import secrets
from functools import partial
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.types import Receive, Scope, Send

from app.api.exchange import (
    JSON_CONTENT,
    AsgiHandler,
    ClientGone,
    answer_client,
    read_body,
)
from app.api.middleware import RECORD_KEY
from app.compaction.turn import compacted, triggered
from app.errors import InvalidRequest, ProxyError
from app.faces.messages.count import estimate_tokens
from app.faces.responses.compaction import ends_with_trigger
from app.faces.responses.face import ResponsesFace
from app.faces.responses.output import ItemIds, response_id, response_shell
from app.faces.responses.request import input_items, translate
from app.faces.responses.stored import (
    deleted,
    history_of,
    input_items_page,
    missing,
    not_found,
    page_arguments,
    referenced_ids,
    resolved_input,
    shown,
    stored_input,
)
from app.openai_types import ChatRequest, chat_request_from_wire, decode_request_body
from app.ops.response_store import ResponseStore
from app.routing.dispatch import Answer
from app.routing.router import Route
from app.state import ProxyState
from app.tool_loop.hosted import has_mcp_tools, hosted_servers
from app.tool_loop.loop import HostedLoop
from app.tool_loop.prepare import prepare
from app.tool_loop.rounds import Rounds
from app.translators.base import NativeRequest

PATH = "/v1/responses"
INPUT_TOKENS_PATH = "/v1/responses/input_tokens"
COMPACT_PATH = "/v1/responses/compact"
ONE_PATH = "/v1/responses/{response_id}"
INPUT_ITEMS_PATH = "/v1/responses/{response_id}/input_items"
UPSTREAM_PATH = "/responses"
UPSTREAM_COMPACT_PATH = "/responses/compact"
WARNING = "x-toolrelay-warning"


async def _create(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = decode_request_body(await read_body(scope, receive), param_style="openai")
    except ClientGone:
        return
    record = scope[RECORD_KEY]
    store, key_scope = proxy.ops.responses, record.key.scope
    route = proxy.router.resolve(_model(body))
    record.model = route.model_name  # a request refused before dispatch is logged with it
    run_here = _run_here(proxy, route, body)
    if run_here is not None:
        await run_here(scope, body, (receive, send))
        return
    # The path as relayed: after an openai provider's base_url, which ends in /v1.
    native = ResponsesFace(NativeRequest(UPSTREAM_PATH, body, {}), None)
    if _native_only(proxy, route):
        face, chat_request = native, _placeholder(body)
    else:
        try:
            history, given = await _conversation(store, key_scope, body)
            translation = translate({**body, "input": given}, history)
            chat_request = chat_request_from_wire(translation.wire)
        except ProxyError as refusal:
            if not _any_native(proxy, route):
                raise
            native.refuse_translation(refusal)
            face, chat_request = native, _placeholder(body)
        else:
            saving = body.get("store") is not False
            save = _saver(store, key_scope, given, history) if saving else None
            face = ResponsesFace(native.request, translation, save)

    async def before_send(result: Answer) -> None:
        if face.translation is not None and face.translation.warning:
            result.headers[WARNING] = _joined(result.headers.get(WARNING), face.translation.warning)
        if result.completion is not None and face.answer is not None and face.save is not None:
            await face.save(face.answer)

    await answer_client(scope, chat_request, (receive, send), face, before_send=before_send)


async def _hosted(scope: Scope, body: dict[str, Any], exchange: tuple[Receive, Send]) -> None:
    """A request with hosted `mcp` tools: ToolRelay runs them (app/tool_loop), whatever the
    upstream, so it is always translated."""
    proxy: ProxyState = scope["app"].state.proxy
    record = scope[RECORD_KEY]
    store, key_scope = proxy.ops.responses, record.key.scope
    record.key.check(record.model)
    servers = hosted_servers(body, proxy.mcp, record.key)
    history, given = await _conversation(store, key_scope, body)
    resp_id = response_id(proxy.new_id())
    ids = ItemIds(resp_id.removeprefix("resp_"))
    prepared = await prepare(body, history, given, servers, proxy.mcp, ids)
    shell = response_shell(body, resp_id=resp_id, created=int(proxy.clock()), model=body["model"])
    loop = HostedLoop(
        proxy,
        record,
        prepared,
        Rounds(prepared, body, ids, proxy.mcp.max_rounds),
        shell,
        _saver(store, key_scope, given, history) if body.get("store") is not False else None,
        show_encrypted=ResponsesFace(NativeRequest(UPSTREAM_PATH, body, {}), None).show_encrypted,
    )
    warning = prepared.translation.warning

    async def before_send(result: Answer) -> None:
        if warning:
            result.headers[WARNING] = _joined(result.headers.get(WARNING), warning)

    produce = loop.stream if body.get("stream") is True else loop.whole
    await answer_client(scope, produce, exchange, before_send=before_send)


async def _compaction(scope: Scope, body: dict[str, Any], exchange: tuple[Receive, Send]) -> None:
    """Input ending in `compaction_trigger` (Codex's remote compaction): answered with one
    `compaction` item summarising what came before (app/compaction), stored like any response
    so a chain goes on from it."""
    proxy: ProxyState = scope["app"].state.proxy
    record = scope[RECORD_KEY]
    store, key_scope = proxy.ops.responses, record.key.scope
    history, given = await _conversation(store, key_scope, body)
    save = _saver(store, key_scope, given, history) if body.get("store") is not False else None
    produce = partial(triggered, proxy, record, body, (history, given[:-1]), save)
    await answer_client(scope, produce, exchange)


async def _compact(scope: Scope, receive: Receive, send: Send) -> None:
    """`POST /v1/responses/compact` (the openai SDK's `responses.compact`): relayed as it came
    to a `responses: native` model, otherwise summarised by the model (app/compaction)."""
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = decode_request_body(await read_body(scope, receive), param_style="openai")
    except ClientGone:
        return
    record = scope[RECORD_KEY]
    route = proxy.router.resolve(_model(body))
    record.model = route.model_name
    if _native_only(proxy, route):
        native = ResponsesFace(NativeRequest(UPSTREAM_COMPACT_PATH, body, {}), None)
        placeholder = _placeholder({**body, "stream": False})
        await answer_client(scope, placeholder, (receive, send), native)
        return
    conversation = await _conversation(proxy.ops.responses, record.key.scope, body)
    await answer_client(
        scope, partial(compacted, proxy, record, body, conversation), (receive, send)
    )


async def _conversation(
    store: ResponseStore, key_scope: str, body: dict[str, Any]
) -> tuple[list[Any], list[Any]]:
    """The stored conversation before this request, and this request's input with its
    references to stored items resolved."""
    history: list[Any] = []
    previous = body.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str):
            raise InvalidRequest(
                "previous_response_id: Input should be a valid string",
                param="previous_response_id",
            )
        stored = await store.load(key_scope, previous)
        if stored is None:
            raise not_found(previous)
        history = history_of(stored)
    given = input_items(body.get("input"))
    found = await store.items(key_scope, referenced_ids(given))
    return history, resolved_input(given, found)


def _saver(store: ResponseStore, key_scope: str, given: list[Any], history: list[Any]) -> Any:
    """Keeps the input as resolved, never a reference: each item is indexed again under its own
    id, so a reference resolved once resolves the same way on every later turn."""

    async def save(response: dict[str, Any]) -> None:
        kept = stored_input(given, ItemIds(secrets.token_hex(12)))
        record = {"response": response, "input": [*history, *kept]}
        await store.save(key_scope, response["id"], record, [*kept, *response["output"]])

    return save


async def _retrieve(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    response_id = scope["path_params"]["response_id"]
    key_scope = scope[RECORD_KEY].key.scope
    store = proxy.ops.responses
    if scope["method"] == "DELETE":
        if not await store.delete(key_scope, response_id):
            raise missing(response_id)
        await _send_json(send, deleted(response_id))
        return
    stored = await store.load(key_scope, response_id)
    if stored is None:
        raise missing(response_id)
    include = parse_qs(scope.get("query_string", b"").decode()).get("include[]", [])
    include += parse_qs(scope.get("query_string", b"").decode()).get("include", [])
    await _send_json(send, shown(stored, include))


async def _input_items(scope: Scope, receive: Receive, send: Send) -> None:
    proxy: ProxyState = scope["app"].state.proxy
    response_id = scope["path_params"]["response_id"]
    stored = await proxy.ops.responses.load(scope[RECORD_KEY].key.scope, response_id)
    if stored is None:
        raise missing(response_id)
    query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
    order, limit, after = page_arguments(query)
    await _send_json(send, input_items_page(stored, order=order, limit=limit, after=after))


async def _input_tokens(scope: Scope, receive: Receive, send: Send) -> None:
    """An estimate from the translated request, as count_tokens gives for upstreams without a
    counting endpoint."""
    proxy: ProxyState = scope["app"].state.proxy
    try:
        body = decode_request_body(await read_body(scope, receive), param_style="openai")
    except ClientGone:
        return
    record = scope[RECORD_KEY]
    route = proxy.router.resolve(_model(body))
    record.model = route.model_name
    record.key.check(route.model_name)
    history, given = await _conversation(proxy.ops.responses, record.key.scope, body)
    wire = translate({**body, "input": given}, history).wire
    counted = estimate_tokens({"messages": wire["messages"], "tools": wire.get("tools")})
    await _send_json(send, {"object": "response.input_tokens", "input_tokens": counted})


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    return model


def _run_here(proxy: ProxyState, route: Route, body: dict[str, Any]) -> Any:
    """The handler for a request ToolRelay answers itself whatever the upstream: a compaction
    (unless every provider of the model is `responses: native`: it goes as sent), hosted
    `mcp` tools; None for an ordinary one."""
    given = body.get("input")
    if isinstance(given, list) and ends_with_trigger(given) and not _native_only(proxy, route):
        return _compaction
    return _hosted if has_mcp_tools(body) else None


def _native_only(proxy: ProxyState, route: Route) -> bool:
    return all(_native(proxy, deployment.target) for deployment in route.deployments)


def _any_native(proxy: ProxyState, route: Route) -> bool:
    return any(_native(proxy, deployment.target) for deployment in route.deployments)


def _native(proxy: ProxyState, target: Any) -> bool:
    translator = proxy.translator(target)
    return target.provider.responses == "native" and translator.responses_native is not None


def _placeholder(body: dict[str, Any]) -> ChatRequest:
    """A chat request that routes by the same model, for a request relayed as it came."""
    wire = {"model": body.get("model"), "messages": [{"role": "user", "content": ""}]}
    return chat_request_from_wire(wire | {"stream": body.get("stream") is True})


def _joined(first: str | None, second: str) -> str:
    return second if not first else f"{first}; {second}"


async def _send_json(send: Send, content: dict[str, Any]) -> None:
    encoded = orjson.dumps(content)
    length = (b"content-length", str(len(encoded)).encode())
    await send({"type": "http.response.start", "status": 200, "headers": [JSON_CONTENT, length]})
    await send({"type": "http.response.body", "body": encoded})


create = AsgiHandler(_create)
retrieve = AsgiHandler(_retrieve)
input_items_list = AsgiHandler(_input_items)
input_tokens = AsgiHandler(_input_tokens)
compact = AsgiHandler(_compact)
