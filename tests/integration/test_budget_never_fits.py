"""A request whose worst case is larger than a budget's whole limit can never pass (CONTRACT.md,
Spend): the same 429 `budget_exceeded`, a message giving the worst case and the output maximum
it assumed (and where from), saying to send a smaller `max_tokens` or raise the budget, and no
`retry-after` (waiting would not help). On chat, Responses and Messages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.conftest import assert_error, make_config, serve
from tests.integration.test_budgets import ALICE, USER, Upstream, auth, config

pytestmark = pytest.mark.anyio


def _raw() -> dict[str, Any]:
    raw = config()
    raw["models"][0]["price"] = {"input": 0, "output": 15.0}  # 4096 tokens: 0.06144 USD
    raw["server"]["keys"][0]["budget"] = {"usd": 0.05, "period": "day"}
    return raw


async def _post(path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    upstream = Upstream()
    async with serve(
        make_config(_raw()), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        response = await client.post(path, json=body, headers=headers)
    assert upstream.bodies == []
    return response


def _check_message(message: str, tokens: int, source: str) -> None:
    assert "the key budget 'alice'" in message
    assert f"{tokens} output tokens" in message
    assert source in message
    assert "max_tokens" in message
    assert "resets in" not in message


async def test_chat_without_max_tokens_names_reserve_output_tokens() -> None:
    response = await _post("/v1/chat/completions", {"model": "mini", "messages": USER}, auth(ALICE))
    error = assert_error(response, 429)
    assert (error["code"], error["type"]) == ("budget_exceeded", "insufficient_quota")
    assert "retry-after" not in response.headers
    assert "0.06144 USD" in error["message"]
    _check_message(error["message"], 4096, "server.spend.reserve_output_tokens")


async def test_responses_names_the_requests_maximum() -> None:
    body = {"model": "mini", "input": "hi", "max_output_tokens": 5000}
    response = await _post("/v1/responses", body, auth(ALICE))
    error = assert_error(response, 429)
    assert error["code"] == "budget_exceeded"
    assert "retry-after" not in response.headers
    _check_message(error["message"], 5000, "the request's")


async def test_messages_in_anthropics_shape() -> None:
    body = {"model": "mini", "max_tokens": 8000, "messages": USER}
    response = await _post("/v1/messages", body, {"x-api-key": ALICE})
    assert response.status_code == 429
    assert "retry-after" not in response.headers
    answer = response.json()
    assert answer["error"]["type"] == "rate_limit_error"
    _check_message(answer["error"]["message"], 8000, "the request's")
