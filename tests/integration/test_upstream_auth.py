"""CONTRACT.md's error row for an upstream 401 or 403: the provider refused ToolRelay's own
credentials, so the client gets a 502 `upstream_auth_failed` naming the provider and the
setting to fix, never a 401/403 it would take for its own key. Every kind, every client API."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import respx

from tests.integration.conftest import USER, assert_error, make_config, raw_config, serve

pytestmark = pytest.mark.anyio

PROVIDERS: dict[str, dict[str, Any]] = {
    "oa": {"kind": "openai", "base_url": "http://oa.test/v1", "api_key": "sk-test-SECRET-123"},
    "an": {"kind": "anthropic", "base_url": "http://an.test", "api_key": "sk-ant-test-SECRET-789"},
    "gm": {"kind": "gemini", "base_url": "http://gm.test", "api_key": "AIza-test-SECRET-321"},
    "az": {"kind": "azure", "base_url": "http://az.test", "api_key": "sk-test-SECRET-123"},
    "br": {
        "kind": "bedrock",
        "base_url": "http://br.test",
        "region": "us-east-1",
        "api_key": "sk-test-SECRET-123",
    },
}
REFUSALS: dict[str, Any] = {
    "oa": {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}},
    "an": {"type": "error", "error": {"type": "authentication_error", "message": "bad x-api-key"}},
    "gm": {"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}},
    "az": {"error": {"code": "401", "message": "Access denied due to invalid subscription key."}},
    "br": {"message": "You don't have access to the model with the specified model ID."},
}
BEDROCK_HEADERS = {"x-amzn-errortype": "AccessDeniedException:http://internal.amazon.com/"}


def _config() -> Any:
    raw = raw_config()
    raw["providers"] = PROVIDERS
    raw["models"] = [
        {"name": f"m-{name}", "provider": name, "model": "some-model", "max_tokens": 64}
        for name in PROVIDERS
    ]
    return make_config(raw)


def _router(name: str, status: int) -> respx.Router:
    router = respx.Router(assert_all_mocked=True)
    headers = BEDROCK_HEADERS if name == "br" else {}
    host = PROVIDERS[name]["base_url"].split("/")[2]
    router.route(host=host).respond(status, json=REFUSALS[name], headers=headers)
    return router


def _check_names_setting(message: str, name: str) -> None:
    assert f"'{name}'" in message
    assert f"providers.{name}.api_key" in message


@pytest.mark.parametrize("name", list(PROVIDERS))
@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_chat_upstream_auth_refusal_is_502(
    anyio_backend: str, name: str, status: int, stream: bool
) -> None:
    router = _router(name, status)
    async with serve(_config(), transport=httpx.MockTransport(router.async_handler)) as client:
        body = {"model": f"m-{name}", "messages": USER, "stream": stream}
        response = await client.post("/v1/chat/completions", json=body)

    error = assert_error(response, 502)
    assert error["code"] == "upstream_auth_failed"
    _check_names_setting(error["message"], name)
    assert len(router.calls) == 1  # not retried


async def test_bedrock_keeps_its_own_message(anyio_backend: str) -> None:
    router = _router("br", 403)
    async with serve(_config(), transport=httpx.MockTransport(router.async_handler)) as client:
        response = await client.post(
            "/v1/chat/completions", json={"model": "m-br", "messages": USER}
        )

    error = assert_error(response, 502)
    assert REFUSALS["br"]["message"] in error["message"]


async def test_responses_upstream_auth_refusal_is_502(anyio_backend: str) -> None:
    router = _router("an", 401)
    async with serve(_config(), transport=httpx.MockTransport(router.async_handler)) as client:
        response = await client.post("/v1/responses", json={"model": "m-an", "input": "hi"})

    error = assert_error(response, 502)
    assert error["code"] == "upstream_auth_failed"
    _check_names_setting(error["message"], "an")


@pytest.mark.parametrize("name", ["an", "oa"])
async def test_messages_upstream_auth_refusal_is_502(anyio_backend: str, name: str) -> None:
    router = _router(name, 401)
    body = {"model": f"m-{name}", "max_tokens": 32, "messages": USER}
    async with serve(_config(), transport=httpx.MockTransport(router.async_handler)) as client:
        response = await client.post("/v1/messages", json=body)

    assert response.status_code == 502, response.text
    answer = response.json()
    assert answer["type"] == "error"
    assert answer["error"]["type"] == "api_error"
    _check_names_setting(answer["error"]["message"], name)
