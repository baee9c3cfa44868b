"""`text.verbosity` (Codex sends `low`) becomes Chat Completions' `verbosity` on the openai
kinds (openai, azure), which take it (issue 38); on a kind without it (anthropic) it is left
out, never a 400."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from tests.helpers.upstream_answers import anthropic_tool_message, openai_tool_completion
from tests.integration.conftest import (
    ANTHROPIC_URL,
    OPENAI_URL,
    PROVIDER_KEY,
    make_config,
    raw_config,
    sent_json,
    serve,
)

pytestmark = pytest.mark.anyio

AZURE_BASE = "http://azure.upstream.test"
AZURE_URL = f"{AZURE_BASE}/openai/v1/chat/completions"


@pytest.fixture
async def proxy(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"]["az"] = {"kind": "azure", "base_url": AZURE_BASE, "api_key": PROVIDER_KEY}
    raw["models"].append({"name": "azure", "provider": "az", "model": "gpt-5"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as client:
        yield client


@pytest.mark.parametrize(("model", "url"), [("mini", OPENAI_URL), ("azure", AZURE_URL)])
async def test_verbosity_reaches_openai_kinds(
    proxy: httpx.AsyncClient, upstream: respx.Router, model: str, url: str
) -> None:
    route = upstream.post(url).respond(200, json=openai_tool_completion())
    body = {"model": model, "input": "hi", "text": {"verbosity": "low"}}

    response = await proxy.post("/v1/responses", json=body)

    assert response.status_code == 200, response.text
    assert sent_json(route)["verbosity"] == "low"
    assert response.json()["text"]["verbosity"] == "low"


async def test_no_verbosity_asked_none_sent(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(OPENAI_URL).respond(200, json=openai_tool_completion())

    response = await proxy.post("/v1/responses", json={"model": "mini", "input": "hi"})

    assert response.status_code == 200, response.text
    assert "verbosity" not in sent_json(route)


async def test_a_kind_without_verbosity_is_not_refused(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = upstream.post(ANTHROPIC_URL).respond(200, json=anthropic_tool_message())
    body = {"model": "claude", "input": "hi", "text": {"verbosity": "high"}}

    response = await proxy.post("/v1/responses", json=body)

    assert response.status_code == 200, response.text
    assert "verbosity" not in json.dumps(sent_json(route))
