"""GET /v1/models and GET /v1/models/{id}: the configured model names the client's key may
use, in OpenAI's list and model object shapes, or in Anthropic's when the request has an
`anthropic-version` header (the anthropic SDK's `models.list`, Claude Code's gateway model
discovery), paged by `limit`, `after_id` and `before_id` as Anthropic pages them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from app.api.middleware import RECORD_KEY
from app.config import MergedModel
from app.errors import InvalidRequest, ModelNotFound
from app.request_record import RequestRecord
from app.state import ProxyState

ANTHROPIC_VERSION = "anthropic-version"
EPOCH = "1970-01-01T00:00:00Z"
"""A model's `created_at` in Anthropic's shape: the epoch, as Anthropic gives an unknown
release date (a configured name has none)."""
DEFAULT_LIMIT, MAX_LIMIT = 20, 1000


async def list_models(request: Request) -> JSONResponse:
    proxy: ProxyState = request.app.state.proxy
    record: RequestRecord = request.scope[RECORD_KEY]
    models = proxy.config.merged_models()
    names = [name for name in models if record.key.may_use(name)]
    if ANTHROPIC_VERSION in request.headers:
        return JSONResponse(_anthropic_page(names, request.query_params))
    return JSONResponse({"object": "list", "data": [_model_object(n, models[n]) for n in names]})


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
    if ANTHROPIC_VERSION in request.headers:
        return JSONResponse(_anthropic_model(name))
    return JSONResponse(_model_object(name, merged))


def _model_object(name: str, merged: MergedModel) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": merged.deployments[0].provider}


def _anthropic_model(name: str) -> dict[str, Any]:
    """Anthropic's ModelInfo: the configured name is the id and the display name."""
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": EPOCH,
        "lifecycle": "active",
    }


def _anthropic_page(names: list[str], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the names: after `after_id` or before `before_id` (names not listed start
    nowhere: an empty page), at most `limit` (1 to 1000, 20 when not given)."""
    raw = query.get("limit", str(DEFAULT_LIMIT))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidRequest(f"limit: Input should be from 1 to {MAX_LIMIT}", param="limit")
    limit = int(raw)
    after, before = query.get("after_id"), query.get("before_id")
    if before is not None:
        end = names.index(before) if before in names else 0
        page, has_more = names[max(0, end - limit) : end], end - limit > 0
    else:
        start = names.index(after) + 1 if after in names else (len(names) if after else 0)
        page, has_more = names[start : start + limit], start + limit < len(names)
    return {
        "data": [_anthropic_model(name) for name in page],
        "has_more": has_more,
        "first_id": page[0] if page else None,
        "last_id": page[-1] if page else None,
    }
