"""A forced tool choice with no tools to choose from is a 400 naming `tool_choice` on every
client API (issue 29), as OpenAI's Chat Completions and Responses and Anthropic's Messages
answer it; nothing goes upstream."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import USER, assert_error

pytestmark = pytest.mark.anyio

_INPUT = "What's the weather in Paris?"
_ASKED: dict[str, dict[str, Any]] = {
    "chat": {"messages": USER, "tool_choice": "required"},
    "chat-empty-tools": {"messages": USER, "tool_choice": "required", "tools": []},
    "responses": {"input": _INPUT, "tool_choice": "required"},
    "responses-empty-tools": {"input": _INPUT, "tool_choice": "required", "tools": []},
}
_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}


@pytest.mark.parametrize("case", sorted(_ASKED))
@pytest.mark.parametrize("stream", [False, True])
async def test_required_without_tools_is_a_400_on_tool_choice(
    proxy: httpx.AsyncClient, case: str, stream: bool
) -> None:
    path = _PATHS[case.partition("-")[0]]
    body = {"model": "demo", "stream": stream, **_ASKED[case]}
    response = await proxy.post(path, json=body)
    error = assert_error(response, 400)
    assert error["param"] == "tool_choice"
    assert "tools" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_messages_any_without_tools_is_a_400(proxy: httpx.AsyncClient, stream: bool) -> None:
    body = {
        "model": "demo",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": _INPUT}],
        "tool_choice": {"type": "any"},
    }
    response = await proxy.post("/v1/messages", json=body)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["type"] == "error"
    assert answer["error"]["type"] == "invalid_request_error"
    assert "tool_choice" in answer["error"]["message"]
    assert "'required'" not in answer["error"]["message"]  # chat's word, not the Messages API's
