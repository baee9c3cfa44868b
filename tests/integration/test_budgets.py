"""Budgets in-process (memory store): each scope (key, team, model) and period refused with
the contract's 429 and retry-after, in OpenAI's and Anthropic's shapes, nothing sent upstream;
the worst case reserved from the request (input at 3 characters a token, output at its
maximum, else the model's, else reserve_output_tokens); settled to the answer's cost;
unpriced models; GET /v1/spend exact. The upstream answers with usage it is told to."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.config import ConfigError
from app.spend.periods import next_reset
from tests.integration.conftest import (
    OPENAI_BASE,
    PROVIDER_KEY,
    assert_error,
    make_config,
    serve,
)

pytestmark = pytest.mark.anyio

ALICE = "alice-key-SECRET-111"
BOB = "bob-key-SECRET-222"
PER_TOKEN = 1e-6  # output: 1 USD per million tokens
USER = [{"role": "user", "content": "hi"}]
USER_TOKENS = math.ceil(len(json.dumps(USER, separators=(",", ":"))) / 3) + 4
"""The messages' JSON, 32 characters at 3 a token (ceil: 11), plus 4 for the message: 15."""


class Upstream:
    """An openai-kind upstream answering every chat request with `completion` tokens of
    usage (None: the request's maximum) and `prompt` prompt tokens."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.completion: int | None = None
        self.prompt = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        tokens = self.completion
        if tokens is None:
            tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        usage = {
            "prompt_tokens": self.prompt,
            "completion_tokens": tokens,
            "total_tokens": self.prompt + tokens,
        }
        message = {"role": "assistant", "content": "ok", "refusal": None}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
                ],
                "usage": usage,
            },
        )


def config(**server: Any) -> dict[str, Any]:
    keys = server.pop("keys", None) or [
        {"name": "alice", "key": ALICE, "team": "research"},
        {"name": "bob", "key": BOB, "team": "research"},
    ]
    return {
        "server": {"keys": keys, "teams": {"research": {}}, **server},
        "router": {"retries": 0},
        "providers": {"oa": {"kind": "openai", "base_url": OPENAI_BASE, "api_key": PROVIDER_KEY}},
        "models": [
            {
                "name": "mini",
                "provider": "oa",
                "model": "gpt-4o-mini",
                "price": {"input": 0, "output": 1.0},
            },
            {
                "name": "capped",
                "provider": "oa",
                "model": "gpt-4o-mini",
                "max_tokens": 300,
                "price": {"input": 0, "output": 1.0},
            },
            {"name": "free", "provider": "oa", "model": "local-llm"},
        ],
    }


def chat(max_tokens: int | None = 100, model: str = "mini", **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": USER, **more}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def expected_retry_after(period: str, before: datetime, after: datetime) -> range:
    """retry-after is whole seconds to the next period start, read between these instants."""
    reset = next_reset(period, before)  # type: ignore[arg-type]
    assert reset is not None
    low = math.ceil((reset - after).total_seconds())
    high = math.ceil((reset - before).total_seconds())
    return range(max(1, low), high + 1)


async def run(
    raw: dict[str, Any], upstream: Upstream, requests: list[tuple[str, dict[str, Any]]]
) -> list[httpx.Response]:
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        return [
            await client.post("/v1/chat/completions", json=body, headers=auth(key))
            for key, body in requests
        ]


@pytest.mark.parametrize(
    ("where", "period", "scope", "name"),
    [
        ("key", "day", "key", "alice"),
        ("team", "week", "team", "research"),
        ("model", "month", "model", "mini"),
    ],
)
async def test_each_scope_holds_exactly_its_limit(
    where: str, period: str, scope: str, name: str
) -> None:
    budget = {"usd": 0.0003, "period": period}  # three requests of 100 output tokens
    raw = config()
    if where == "key":
        raw["server"]["keys"][0]["budget"] = budget
    elif where == "team":
        raw["server"]["teams"]["research"] = {"budget": budget}
    else:
        raw["server"]["budgets"] = {"mini": budget}
    upstream = Upstream()
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        for _ in range(3):
            ok = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
            assert ok.status_code == 200, ok.text
        before = datetime.now(UTC)
        refused = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        after = datetime.now(UTC)
        # One token less leaves room for nothing either: the budget is spent to the cent.
        tiny = await client.post("/v1/chat/completions", json=chat(1), headers=auth(ALICE))
        other = await client.post("/v1/chat/completions", json=chat(), headers=auth(BOB))
    assert len(upstream.bodies) == 3 + (1 if where == "key" else 0)
    error = assert_error(refused, 429)
    assert (error["code"], error["type"]) == ("budget_exceeded", "insufficient_quota")
    assert f"the {scope} budget '{name}'" in error["message"]
    assert ALICE not in refused.text
    reset = next_reset(period, before)  # type: ignore[arg-type]
    assert reset is not None
    assert reset.strftime("%Y-%m-%dT%H:%M:%SZ") in error["message"]
    assert int(refused.headers["retry-after"]) in expected_retry_after(period, before, after)
    assert tiny.status_code == 429
    # Bob has no budget of his own; the team's and the model's are shared.
    assert other.status_code == (200 if where == "key" else 429)


async def test_a_total_budget_has_no_retry_after() -> None:
    raw = config()
    raw["server"]["keys"][0]["budget"] = {"usd": 0.0001, "period": "total"}
    responses = await run(raw, Upstream(), [(ALICE, chat()), (ALICE, chat())])
    assert responses[0].status_code == 200
    error = assert_error(responses[1], 429)
    assert "retry-after" not in responses[1].headers
    assert "never resets" in error["message"]


async def test_the_messages_api_gets_anthropics_shape() -> None:
    raw = config()
    raw["server"]["keys"][0]["budget"] = {"usd": 0.00015, "period": "day"}
    upstream = Upstream()
    body = {"model": "mini", "max_tokens": 100, "messages": USER}
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        first = await client.post("/v1/messages", json=body, headers={"x-api-key": ALICE})
        assert first.status_code == 200, first.text
        before = datetime.now(UTC)
        response = await client.post("/v1/messages", json=body, headers={"x-api-key": ALICE})
        after = datetime.now(UTC)
    assert response.status_code == 429
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "rate_limit_error"
    assert "the key budget 'alice'" in body["error"]["message"]
    assert int(response.headers["retry-after"]) in expected_retry_after("day", before, after)
    assert len(upstream.bodies) == 1


@pytest.mark.parametrize(
    ("body", "model", "tokens"),
    [
        ({"max_tokens": 250}, "mini", 250),
        ({"max_completion_tokens": 250, "max_tokens": 900}, "mini", 250),
        ({}, "capped", 300),  # the model's max_tokens
        ({}, "mini", 4096),  # reserve_output_tokens' default
        ({"max_tokens": 100, "n": 3}, "mini", 300),
    ],
)
async def test_the_worst_case_output(body: dict[str, Any], model: str, tokens: int) -> None:
    """A budget of exactly the worst case admits the request; a nano-dollar less refuses."""
    request = {"model": model, "messages": USER, **body}
    for usd, status in ((tokens * PER_TOKEN, 200), (tokens * PER_TOKEN - 1e-9, 429)):
        raw = config()
        raw["server"]["keys"][0]["budget"] = {"usd": usd, "period": "day"}
        upstream = Upstream()
        upstream.completion = 1
        [response] = await run(raw, upstream, [(ALICE, request)])
        assert response.status_code == status, response.text


async def test_the_worst_case_input_is_counted_generously() -> None:
    raw = config()
    raw["models"][0]["price"] = {"input": 1.0, "output": 0}
    for usd, status in ((USER_TOKENS * PER_TOKEN, 200), ((USER_TOKENS - 1) * PER_TOKEN, 429)):
        raw["server"]["keys"][0]["budget"] = {"usd": usd, "period": "day"}
        [response] = await run(raw, Upstream(), [(ALICE, chat())])
        assert response.status_code == status, response.text


async def test_settled_to_the_cost_and_shown_by_v1_spend() -> None:
    raw = config(budgets={"mini": {"usd": 1, "period": "month"}})
    raw["server"]["keys"][0]["budget"] = {"usd": 0.001, "period": "day"}
    raw["server"]["teams"]["research"] = {"budget": {"usd": 0.5, "period": "week"}}
    upstream = Upstream()
    upstream.completion = 40  # of 100 reserved
    async with serve(
        make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        for _ in range(3):
            ok = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
            assert ok.status_code == 200
        await client.post("/v1/chat/completions", json=chat(), headers=auth(BOB))
        now = datetime.now(UTC)
        alice = (await client.get("/v1/spend", headers=auth(ALICE))).json()
        bob = (await client.get("/v1/spend", headers=auth(BOB))).json()
    day = (now + timedelta(days=1)).strftime("%Y-%m-%dT00:00:00Z")
    assert alice == {
        "key": "alice",
        "spent_usd": 0.00012,
        "budgets": [
            {
                "scope": "key",
                "name": "alice",
                "limit_usd": 0.001,
                "spent_usd": 0.00012,
                "reserved_usd": 0.0,
                "period": "day",
                "resets_at": day,
            },
            {
                "scope": "team",
                "name": "research",
                "limit_usd": 0.5,
                "spent_usd": 0.00016,
                "reserved_usd": 0.0,
                "period": "week",
                "resets_at": next_reset("week", now).strftime("%Y-%m-%dT%H:%M:%SZ"),  # type: ignore[union-attr]
            },
            {
                "scope": "model",
                "name": "mini",
                "limit_usd": 1.0,
                "spent_usd": 0.00016,
                "reserved_usd": 0.0,
                "period": "month",
                "resets_at": next_reset("month", now).strftime("%Y-%m-%dT%H:%M:%SZ"),  # type: ignore[union-attr]
            },
        ],
    }
    assert bob["key"] == "bob"
    assert bob["spent_usd"] == 0.00004
    assert [b["scope"] for b in bob["budgets"]] == ["team", "model"]


async def test_an_unpriced_model_under_a_budget() -> None:
    raw = config()
    raw["server"]["keys"][0]["budget"] = {"usd": 1, "period": "day"}
    responses = await run(raw, Upstream(), [(ALICE, chat(model="free")), (BOB, chat(model="free"))])
    error = assert_error(responses[0], 403)
    assert error["code"] == "model_not_priced"
    assert "'free'" in error["message"]
    assert responses[1].status_code == 200  # no budget applies to Bob's request
    raw["server"]["spend"] = {"unpriced": "free"}
    [free] = await run(raw, Upstream(), [(ALICE, chat(model="free"))])
    assert free.status_code == 200


async def test_without_budgets_there_is_no_guard_and_v1_spend_is_empty() -> None:
    upstream = Upstream()
    async with serve(
        make_config(config()), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        assert client._transport.app.state.proxy.spend is None  # type: ignore[attr-defined]
        ok = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        assert ok.status_code == 200
        spend = (await client.get("/v1/spend", headers=auth(ALICE))).json()
    assert spend == {"key": "alice", "spent_usd": 0.0, "budgets": []}


def test_a_keys_unknown_team_is_refused() -> None:
    raw = config()
    raw["server"]["keys"][0]["team"] = "reserch"
    with pytest.raises(ConfigError, match=r"keys\[0\].team: unknown team 'reserch'"):
        make_config(raw)


async def test_v1_spend_needs_a_key() -> None:
    raw = config()
    async with serve(make_config(raw), client_key=None) as client:
        response = await client.get("/v1/spend")
    assert_error(response, 401)


class FailingFirst(Upstream):
    """The first model's upstream id fails with a retryable 500; the fallback's answers."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "gpt-4o-mini":
            self.bodies.append(json.loads(request.content))
            return httpx.Response(500, json={"error": {"message": "down", "type": "server"}})
        return super().__call__(request)


def fallback_config(big_budget: float) -> dict[str, Any]:
    raw = config(
        budgets={"mini": {"usd": 1, "period": "day"}, "big": {"usd": big_budget, "period": "day"}}
    )
    raw["models"][0]["fallbacks"] = ["big"]
    raw["models"].append(
        {
            "name": "big",
            "provider": "oa",
            "model": "gpt-4o",
            "price": {"input": 0, "output": 2.0},
        }
    )
    return raw


async def test_a_fallback_reserves_against_its_model_budget_and_is_charged_alone() -> None:
    upstream = FailingFirst()
    upstream.completion = 30
    async with serve(
        make_config(fallback_config(1)), transport=httpx.MockTransport(upstream), client_key=None
    ) as client:
        response = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
        view = (await client.get("/v1/spend", headers=auth(ALICE))).json()
    assert response.status_code == 200, response.text
    assert response.headers["x-toolrelay-model"] == "big"
    spent = {b["name"]: (b["spent_usd"], b["reserved_usd"]) for b in view["budgets"]}
    # 30 output tokens at 2 USD per million, on the model that answered; the first is released.
    assert spent == {"mini": (0.0, 0.0), "big": (0.00006, 0.0)}
    assert view["spent_usd"] == 0.00006


async def test_a_fallback_its_budget_cannot_hold_is_skipped() -> None:
    upstream = FailingFirst()
    # The fallback's worst case is 100 tokens at 2 USD per million: 0.0002.
    async with serve(
        make_config(fallback_config(0.0002 - 1e-9)),
        transport=httpx.MockTransport(upstream),
        client_key=None,
    ) as client:
        response = await client.post("/v1/chat/completions", json=chat(), headers=auth(ALICE))
    # The first model's error (an upstream 500 is our 502), not the fallback's budget.
    assert response.status_code == 502
    assert response.headers["x-toolrelay-model"] == "mini"
    assert [body["model"] for body in upstream.bodies] == ["gpt-4o-mini"]


async def test_the_responses_api_reserves_max_output_tokens() -> None:
    for usd, status in ((250 * PER_TOKEN, 200), (250 * PER_TOKEN - 1e-9, 429)):
        raw = config()
        raw["server"]["keys"][0]["budget"] = {"usd": usd, "period": "day"}
        upstream = Upstream()
        upstream.completion = 1
        async with serve(
            make_config(raw), transport=httpx.MockTransport(upstream), client_key=None
        ) as client:
            response = await client.post(
                "/v1/responses",
                json={"model": "mini", "input": "hi", "max_output_tokens": 250},
                headers=auth(ALICE),
            )
        assert response.status_code == status, response.text
        if status == 429:
            assert response.json()["error"]["code"] == "budget_exceeded"
