"""GET /v1/models: the configured model names, in OpenAI's list shape."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.state import ProxyState


async def list_models(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    data = [
        {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": merged.deployments[0].provider,
        }
        for name, merged in proxy.config.merged_models().items()
    ]
    return JSONResponse({"object": "list", "data": data})
