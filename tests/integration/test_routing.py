"""Routing (configured name, PROVIDER/MODEL, unknown), /v1/models, /health, x-toolrelay-model."""

from __future__ import annotations

import httpx
import pytest
import respx

from tests.helpers.upstream_answers import openai_tool_completion
from tests.integration.conftest import OPENAI_URL, assert_error, chat, sent_json

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("model", "upstream_model"),
    [
        ("mini", "gpt-4o-mini"),
        ("oa/gpt-4.1-nano", "gpt-4.1-nano"),
        ("oa/meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("oa/pinned", "gpt-4o-2024-08-06"),  # a configured name wins over the direct form
    ],
)
async def test_model_is_routed_to_its_upstream_id(
    proxy: httpx.AsyncClient, upstream: respx.Router, model: str, upstream_model: str
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    response = await proxy.post("/v1/chat/completions", json=chat(model))

    assert response.status_code == 200
    assert sent_json(route)["model"] == upstream_model


@pytest.mark.parametrize("model", ["mini", "oa/gpt-4.1-nano"])
async def test_answer_names_the_model_the_client_asked_for(
    proxy: httpx.AsyncClient, upstream: respx.Router, model: str
) -> None:
    upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    response = await proxy.post("/v1/chat/completions", json=chat(model))

    assert response.json()["model"] == model
    assert response.headers["x-toolrelay-model"] == model


@pytest.mark.parametrize("model", ["gpt-5-imaginary", "nowhere/gpt-4o", "oa/", "/gpt-4o"])
async def test_unknown_model_is_404_model_not_found(
    proxy: httpx.AsyncClient, upstream: respx.Router, model: str
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())

    response = await proxy.post("/v1/chat/completions", json=chat(model))

    error = assert_error(response, 404)
    assert error["code"] == "model_not_found"
    assert error["param"] == "model"
    assert not route.called


async def test_health_answers_ok(proxy: httpx.AsyncClient) -> None:
    response = await proxy.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_models_lists_configured_names_in_openai_list_shape(proxy: httpx.AsyncClient) -> None:
    response = await proxy.get("/v1/models")

    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    assert [model["id"] for model in body["data"]] == ["mini", "oa/pinned", "claude", "demo"]
    for model in body["data"]:
        assert model["object"] == "model"
        assert isinstance(model["created"], int)
        assert isinstance(model["owned_by"], str)
