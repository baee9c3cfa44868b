"""The ASGI app: `create_app(config, transport=...)`, and a module-level `app` for
`uvicorn app.main:app` that loads `$TOOLRELAY_CONFIG` (default ./config.yaml) on first use."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.api.chat import PATH as CHAT_PATH
from app.api.chat import chat_completions
from app.api.console_routes import console_routes
from app.api.embeddings import PATH as EMBEDDINGS_PATH
from app.api.embeddings import embeddings
from app.api.errors import handle_http_exception, handle_proxy_error
from app.api.health import health
from app.api.mcp import PATH as MCP_PATH
from app.api.mcp import McpRoute
from app.api.messages import COUNT_PATH, count_tokens, messages
from app.api.messages import PATH as MESSAGES_PATH
from app.api.metrics import metrics
from app.api.middleware import RequestMiddleware
from app.api.models import list_models, retrieve_model
from app.api.passthrough_route import PassthroughRoute
from app.api.responses import (
    COMPACT_PATH,
    INPUT_ITEMS_PATH,
    INPUT_TOKENS_PATH,
    ONE_PATH,
    compact,
    create,
    input_items_list,
    input_tokens,
    retrieve,
)
from app.api.responses import PATH as RESPONSES_PATH
from app.api.responses_ws import HandshakeHeaderLines, responses_socket
from app.api.spend import PATH as SPEND_PATH
from app.api.spend import spend
from app.config import Config, ConfigError, load_config
from app.credentials.providers import provider_credentials
from app.credentials.regions import warn_unknown_regions
from app.errors import ProxyError, Redactor
from app.ops.logs import configure_logging
from app.ops.setup import build_operations
from app.ops.tracing import Tracing
from app.relay.upstream import Upstreams
from app.routing.balancer import Balancer, Cooldowns
from app.routing.quality import QualityMetrics, QualityTracker
from app.routing.router import Router
from app.spend.prices import PriceBook
from app.state import ProxyState, new_completion_id
from app.translators import TRANSLATORS
from app.translators.base import LocalUpstream

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("toolrelay")
# httpx logs every upstream request at INFO: a second line per request, with the upstream URL,
# next to RequestMiddleware's one. Its warnings still show.
logging.getLogger("httpx").setLevel(logging.WARNING)
# The same for the MCP SDK's HTTP client (httpx2), and the SDK's own per-request info lines
# (a failed tool's message among them): the /mcp endpoint logs one line per call itself.
logging.getLogger("httpx2").setLevel(logging.WARNING)
logging.getLogger("mcp").setLevel(logging.WARNING)
# At debug level the WebSocket server logs an upgrade's headers, the client's key among them.
logging.getLogger("uvicorn.error").addFilter(HandshakeHeaderLines())


def create_app(
    config: Config,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    new_id: Callable[[], str] = new_completion_id,
    tracing: Tracing | None = None,
) -> FastAPI:
    """`transport` replaces the network for every networked provider (tests inject respx or
    httpx.MockTransport here); built-in upstreams such as the demo keep their own. `tracing`
    replaces the configured one (tests pass an in-memory exporter). What the config names
    besides itself (the price file) is read here, so a bad one is a ConfigError before
    anything is served, never a failed lifespan."""
    prices = PriceBook.from_config(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.proxy = proxy = build_state(
            config, transport=transport, new_id=new_id, tracing=tracing, prices=prices
        )
        _report_missing_keys(config)
        if config.server.database is not None:
            # Imported here: a config without a database never loads SQLAlchemy.
            from app.console.service import open_console  # noqa: PLC0415

            proxy.console = await open_console(config.server, proxy.registry, proxy.redact)
        warn_unknown_regions(config)
        try:
            async with mcp_route.running(eager=bool(config.mcp.servers)):
                yield
        finally:
            await proxy.aclose()

    mcp_route = McpRoute()
    app = ToolRelayApp(
        title="ToolRelay", lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None
    )
    # Plain Starlette routes: the handlers read the body themselves (a FastAPI body parameter
    # would answer bad input with 422 {"detail": ...}, not the contract's 400). The chat route
    # is registered too, but only answers what the fast route does not take (GET: 405).
    app.router.routes.append(Route(CHAT_PATH, chat_completions, methods=["POST"]))
    app.router.routes.append(Route(MESSAGES_PATH, messages, methods=["POST"]))
    app.router.routes.append(Route(COUNT_PATH, count_tokens, methods=["POST"]))
    app.router.routes.append(Route(EMBEDDINGS_PATH, embeddings, methods=["POST"]))
    app.router.routes.append(Route(RESPONSES_PATH, create, methods=["POST"]))
    app.router.routes.append(Route(INPUT_TOKENS_PATH, input_tokens, methods=["POST"]))
    app.router.routes.append(Route(COMPACT_PATH, compact, methods=["POST"]))
    app.router.routes.append(Route(ONE_PATH, retrieve, methods=["GET", "DELETE"]))
    app.router.routes.append(Route(INPUT_ITEMS_PATH, input_items_list, methods=["GET"]))
    app.router.add_route("/v1/models", list_models, methods=["GET"])
    app.router.add_route(SPEND_PATH, spend, methods=["GET"])
    app.router.add_route("/health", health, methods=["GET"])
    app.router.add_route("/metrics", metrics, methods=["GET"])
    app.router.routes.append(Route(MCP_PATH, mcp_route, methods=["GET", "POST", "DELETE"]))
    app.router.routes.extend(console_routes())
    app.router.add_route("/v1/models/{model_id:path}", retrieve_model, methods=["GET"])
    # Last: every other /v1/ path is passed through to an openai-kind upstream.
    app.router.routes.append(PassthroughRoute(list(app.router.routes)))
    app.add_exception_handler(ProxyError, handle_proxy_error)
    app.add_exception_handler(HTTPException, handle_http_exception)
    return app


def build_state(
    config: Config,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    new_id: Callable[[], str] = new_completion_id,
    tracing: Tracing | None = None,
    prices: PriceBook | None = None,
) -> ProxyState:
    """Everything one running proxy holds, opened; the caller closes it (`aclose`). The server's
    lifespan and `eval` both build it here, so eval runs the server's routing and translation.
    `prices`: the book create_app read (None: read the price file now)."""
    registry = CollectorRegistry()
    router = Router(config)
    balancer = Balancer(Cooldowns(config.router.cooldown))
    ops = build_operations(config.server, registry, router.served(), tracing)
    quality = QualityTracker(
        QualityMetrics(registry), balancer.cooldowns, ops.quality, ops.cooldowns
    )
    return ProxyState(
        config=config,
        router=router,
        upstreams=Upstreams(
            config,
            local=_local_upstreams(),
            transport=transport,
            credentials=provider_credentials(config),
        ),
        translators=TRANSLATORS,
        redact=Redactor(config.secrets()),
        balancer=balancer,
        registry=registry,
        ops=ops,
        quality=quality,
        spend_prices=PriceBook.from_config(config) if prices is None else prices,
        new_id=new_id,
    )


class ToolRelayApp(FastAPI):
    """FastAPI with RequestMiddleware outermost and POST /v1/chat/completions served by it
    directly: the framework's middleware stack (error pages, body limits, exception handlers,
    exit stacks, routing) cost a fifth of a streamed request's CPU and adds nothing the chat
    handler needs. The Responses WebSocket (`GET /v1/responses` upgraded) goes straight to its
    handler too: it is the one WebSocket served, and the framework's wrapping of `send` would
    cost on every frame. Every other path goes through FastAPI as usual."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        framework = super().__call__
        self._outer = RequestMiddleware(
            framework,
            fast_routes={
                ("POST", CHAT_PATH): chat_completions,
                ("POST", MESSAGES_PATH): messages,
                ("POST", COUNT_PATH): count_tokens,
                ("POST", RESPONSES_PATH): create,
                ("POST", EMBEDDINGS_PATH): embeddings,
            },
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and scope["path"] == RESPONSES_PATH:
            scope["app"] = self  # the Responses WebSocket, straight to its handler as well
            await responses_socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)  # lifespan
            return
        scope["app"] = self
        await self._outer(scope, receive, send)


def _local_upstreams() -> dict[str, LocalUpstream]:
    return {
        kind: translator.local_upstream
        for kind, translator in TRANSLATORS.items()
        if translator.local_upstream is not None
    }


def _report_missing_keys(config: Config) -> None:
    for name, provider in config.providers.items():
        if provider.key_missing:
            logger.warning(
                "provider '%s' has an empty api_key (is its environment variable set?); "
                "its requests will be answered with 401",
                name,
            )


def _app_from_environment() -> FastAPI:
    path = os.environ.get("TOOLRELAY_CONFIG", "config.yaml")
    try:
        config = load_config(path)
        configure_logging(config.server.log)
        return create_app(config)
    except ConfigError as exc:
        print(f"toolrelay: {exc}", file=sys.stderr)  # noqa: T201
        raise SystemExit(2) from None


def __getattr__(name: str) -> FastAPI:
    # Lazy, so importing app.main (tests, tools) never needs a config file.
    if name == "app":
        application = _app_from_environment()
        globals()["app"] = application
        return application
    raise AttributeError(name)
