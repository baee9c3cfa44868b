"""Client keys on /v1/*, `${VAR:-}` keys, and a provider whose key is missing."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
import respx

from tests.helpers.upstream_answers import openai_tool_completion
from tests.integration.conftest import (
    CLIENT_KEY,
    OPENAI_URL,
    assert_error,
    chat,
    make_config,
    raw_config,
    serve,
)

pytestmark = pytest.mark.anyio


def _transport(upstream: respx.Router) -> httpx.MockTransport:
    return httpx.MockTransport(upstream.async_handler)


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (None, 401),
        ("Bearer not-the-key", 401),
        (f"Bearer {CLIENT_KEY}x", 401),
        (f"Basic {CLIENT_KEY}", 401),
        (CLIENT_KEY, 401),
        (f"Bearer {CLIENT_KEY}", 200),
        (f"bearer {CLIENT_KEY}", 200),
    ],
)
@pytest.mark.parametrize(
    "endpoint",
    [("POST", "/v1/chat/completions", chat()), ("GET", "/v1/models", None)],
    ids=["chat", "models"],
)
async def test_v1_needs_a_configured_client_key(
    upstream: respx.Router,
    anyio_backend: str,
    authorization: str | None,
    status: int,
    endpoint: tuple[str, str, dict[str, Any] | None],
) -> None:
    method, path, body = endpoint
    upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    headers = {"authorization": authorization} if authorization else {}
    async with serve(make_config(), transport=_transport(upstream), client_key=None) as client:
        response = await client.request(method, path, json=body, headers=headers)

    if status == 401:
        assert_error(response, 401)
    else:
        assert response.status_code == 200


async def test_rejected_key_never_reaches_the_upstream(
    upstream: respx.Router, anyio_backend: str
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    async with serve(make_config(), transport=_transport(upstream), client_key="wrong") as client:
        await client.post("/v1/chat/completions", json=chat())

    assert not route.called


async def test_health_needs_no_key(upstream: respx.Router, anyio_backend: str) -> None:
    async with serve(make_config(), transport=_transport(upstream), client_key=None) as client:
        response = await client.get("/health")

    assert response.status_code == 200


@pytest.mark.parametrize(("environ", "status"), [({}, 200), ({"TOOLRELAY_API_KEY": "k-1"}, 401)])
async def test_empty_interpolated_client_key_means_no_auth(
    upstream: respx.Router, anyio_backend: str, environ: dict[str, str], status: int
) -> None:
    upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    raw = raw_config()
    raw["server"]["api_keys"] = ["${TOOLRELAY_API_KEY:-}"]
    config = make_config(raw, environ)
    async with serve(config, transport=_transport(upstream), client_key=None) as client:
        response = await client.post("/v1/chat/completions", json=chat())

    assert response.status_code == status


def _missing_provider_key_config() -> dict[str, Any]:
    raw = raw_config()
    raw["providers"]["oa"]["api_key"] = "${UNSET_PROVIDER_KEY}"
    return raw


async def test_provider_with_missing_key_answers_401(
    upstream: respx.Router, anyio_backend: str
) -> None:
    route = upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    config = make_config(_missing_provider_key_config())
    async with serve(config, transport=_transport(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat())

    error = assert_error(response, 401)
    assert "'oa'" in error["message"]
    assert not route.called


async def test_provider_with_missing_key_is_reported_once_at_startup(
    upstream: respx.Router, anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(_missing_provider_key_config())
    async with serve(config, transport=_transport(upstream)):
        pass

    reports = [r for r in caplog.records if r.levelno >= logging.WARNING and "'oa'" in r.message]
    assert len(reports) == 1


async def test_provider_with_missing_key_leaves_the_others_serving(
    upstream: respx.Router, anyio_backend: str
) -> None:
    upstream.post(OPENAI_URL).respond(json=openai_tool_completion())
    raw = _missing_provider_key_config()
    raw["providers"]["oa2"] = raw_config()["providers"]["oa"]
    config = make_config(raw)
    async with serve(config, transport=_transport(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat("oa2/gpt-4o"))

    assert response.status_code == 200
