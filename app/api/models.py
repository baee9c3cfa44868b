"""GET /v1/models: the configured model names, in OpenAI's list shape."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.state import ProxyState


async def list_models(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    data = [
        {"id": model.name, "object": "model", "created": 0, "owned_by": model.provider}
        for model in proxy.config.models
    ]
    return JSONResponse({"object": "list", "data": data})
