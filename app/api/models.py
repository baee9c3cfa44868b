"""GET /v1/models and GET /v1/models/{id}: the configured model names the client's key may
use, in OpenAI's list and model object shapes."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.api.middleware import RECORD_KEY
from app.config import MergedModel
from app.errors import ModelNotFound
from app.request_record import RequestRecord
from app.state import ProxyState


async def list_models(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    record: RequestRecord = request.scope[RECORD_KEY]
    data = [
        _model_object(name, merged)
        for name, merged in proxy.config.merged_models().items()
        if record.key.may_use(name)
    ]
    return JSONResponse({"object": "list", "data": data})


async def retrieve_model(request: Request) -> JSONResponse:
    """The openai SDK's `models.retrieve`: one configured model (ids may hold slashes); the
    key's allow-list applies as it does to every other use of a model name (403)."""
    proxy: ProxyState = request.app.state.proxy
    record: RequestRecord = request.scope[RECORD_KEY]
    name = request.path_params["model_id"]
    merged = proxy.config.merged_models().get(name)
    if merged is None:
        raise ModelNotFound(
            f"The model '{name}' does not exist on this proxy (GET /v1/models lists them).",
            param="model",
        )
    record.key.check(name)
    record.model = name
    return JSONResponse(_model_object(name, merged))


def _model_object(name: str, merged: MergedModel) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": merged.deployments[0].provider}
