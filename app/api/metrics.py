"""GET /metrics: the app's Prometheus registry in the text format (no client key: bind it to
a private network)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response

from app.state import ProxyState


async def metrics(request: Request) -> Response:
    proxy: ProxyState = request.app.state.proxy
    return Response(generate_latest(proxy.registry), media_type=CONTENT_TYPE_LATEST)
