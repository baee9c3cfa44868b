"""GET /v1/models: the configured model names the client's key may use, in OpenAI's list
shape."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.api.middleware import RECORD_KEY
from app.request_record import RequestRecord
from app.state import ProxyState


async def list_models(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    record: RequestRecord = request.scope[RECORD_KEY]
    data = [
        {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": merged.deployments[0].provider,
        }
        for name, merged in proxy.config.merged_models().items()
        if record.key.may_use(name)
    ]
    return JSONResponse({"object": "list", "data": data})
