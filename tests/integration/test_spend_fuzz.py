"""Issue 32 under hypothesis (CONTRACT.md, "Spend"): any `price`, `server.spend`,
key `team`/`budget`, `server.teams`, `server.budgets`, MCP `cost_per_call` loads the whole start-up
or fails with one ConfigError line (no traceback, no secret); GET /v1/spend (any method, query,
key) and priced chat/Responses/Messages bodies under budgets: never a 5xx, errors in each API's
shape. The defects it found are pinned at the end (fixed)."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import operator
import tracemalloc
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config import ConfigError, parse_config
from app.main import build_state
from app.spend.ledger import Budget, MemoryLedger, Reservation
from app.spend_config import MAX_BUDGET
from tests.helpers.mock_upstream import anthropic_frames, openai_frames
from tests.integration.conftest import (
    ANTHROPIC_BASE,
    ANTHROPIC_KEY,
    OPENAI_BASE,
    PROVIDER_KEY,
    SECRETS,
    make_config,
    serve,
)

ALICE, BOB, CAROL, OLD = "alice-SECRET-a1", "bob-SECRET-b2", "carol-SECRET-c3", "old-SECRET-d4"
KEYS = {"alice": ALICE, "bob": BOB, "carol": CAROL, "default": OLD}
ALL_SECRETS = (*SECRETS, ALICE, BOB, CAROL, OLD)
USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
CLAUDE_USAGE = {"input_tokens": 12, "output_tokens": 7}
HI = [{"role": "user", "content": "hi"}]

odd_numbers = st.one_of(
    st.sampled_from([0, -1, -0.0, 1, 0.5, 2**31, 2**53 + 1, 2**63, 10**18, 1e15, 1e200, 1e308]),
    st.sampled_from(["NaN", "nan", "inf", "-inf", "1e999", "", "3", True, False, None]),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e200, max_value=1e200),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["usd", "x"]), st.integers(0, 3), max_size=2),
)
"""Missing is left to each field's `optional`; huge goes to 1e308 (USD, tokens, per million)."""
periods = st.one_of(st.sampled_from(["day", "week", "month", "total"]), odd_numbers, st.text())
budget = st.one_of(
    st.fixed_dictionaries({"usd": odd_numbers, "period": periods}),
    st.fixed_dictionaries({}, optional={"usd": odd_numbers, "period": periods, "extra": st.none()}),
    odd_numbers,
)
price = st.one_of(
    st.fixed_dictionaries(
        {"input": odd_numbers, "output": odd_numbers},
        optional={"cache_read": odd_numbers, "cache_write": odd_numbers, "other": odd_numbers},
    ),
    odd_numbers,
)
spend_section = st.fixed_dictionaries(
    {},
    optional={
        "prices": st.sampled_from(["/nonexistent/prices.json", "", "/dev/null", "/etc"]),
        "unpriced": st.one_of(st.sampled_from(["refuse", "free", "REFUSE"]), odd_numbers),
        "reserve_output_tokens": odd_numbers,
        "reservation_ttl": odd_numbers,
        "junk": st.none(),
    },
)


MINI = {"provider": "oa", "model": "gpt-4o-mini"}
CLAUDE = {"provider": "an", "model": "claude-sonnet-4-5"}
MCP_URL = "https://mcp.example.test/"


def base_config() -> dict[str, Any]:
    """Two priced models (one per kind), an unpriced one, three named keys and an old one."""
    alice = {"name": "alice", "key": ALICE, "budget": {"usd": 0.004, "period": "day"}}
    keys = [
        {**alice, "team": "research"},
        {"name": "bob", "key": BOB, "team": "research"},
        {"name": "carol", "key": CAROL},
    ]
    return {
        "server": {
            "api_keys": [OLD],
            "keys": keys,
            "teams": {"research": {"budget": {"usd": MAX_BUDGET, "period": "total"}}},
            "budgets": {"mini": {"usd": 1000, "period": "month"}},
        },
        "router": {"retries": 0},
        "providers": {
            "oa": {"kind": "openai", "base_url": OPENAI_BASE, "api_key": PROVIDER_KEY},
            "an": {"kind": "anthropic", "base_url": ANTHROPIC_BASE, "api_key": ANTHROPIC_KEY},
        },
        "models": [
            {"name": "mini", **MINI, "price": {"input": 1, "output": 2}},
            {"name": "claude", **CLAUDE, "max_tokens": 900, "price": {"input": 3, "output": 15}},
            {"name": "free", "provider": "oa", "model": "local-llm"},
        ],
        "mcp": {"servers": {"search": {"url": MCP_URL, "cost_per_call": 0.005}}},
    }


def _set(path: tuple[Any, ...]) -> Callable[[dict[str, Any], Any], None]:
    """A setter of the value at `path` in a config."""
    return lambda raw, value: functools.reduce(operator.getitem, path[:-1], raw).__setitem__(
        path[-1], value
    )


deployments = st.lists(
    st.fixed_dictionaries({**{k: st.just(v) for k, v in MINI.items()}, "price": price}), max_size=2
)
teams = st.dictionaries(
    st.sampled_from(["research", "ops", ""]),
    st.one_of(st.fixed_dictionaries({}, optional={"budget": budget}), odd_numbers),
    max_size=2,
)
budgeted = st.sampled_from(["mini", "claude", "free", "nope", "oa/gpt-4o-mini"])
EDITS: list[tuple[Callable[[dict[str, Any], Any], None], st.SearchStrategy[Any]]] = [
    (_set(("models", 0, "price")), price),
    (_set(("models", 1, "price")), price),
    (_set(("models", 2, "deployments")), deployments),
    (_set(("server", "spend")), spend_section),
    (_set(("server", "keys", 0, "team")), st.sampled_from(["research", "nope", ""]) | odd_numbers),
    (_set(("server", "keys", 1, "budget")), budget),
    (_set(("server", "teams")), teams),
    (_set(("server", "budgets")), st.dictionaries(budgeted, budget, max_size=3)),
    (_set(("mcp", "servers", "search", "cost_per_call")), odd_numbers),
]


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    raw = base_config()
    for index in draw(st.sets(st.integers(0, len(EDITS) - 1), min_size=1, max_size=4)):
        put, values = EDITS[index]
        put(raw, draw(values))
    return raw


def start(raw: dict[str, Any]) -> None:
    """The whole start-up but serving: the config parsed, then every piece of state built."""
    asyncio.run(build_state(parse_config(raw, "fuzz.yaml", {})).aclose())


def check_config_error(error: ConfigError) -> None:
    text = str(error)
    assert text.startswith(("fuzz.yaml: ", "server.spend.prices: ")), text
    assert "\n" not in text, text  # one line: no traceback either
    assert not any(secret in text for secret in ALL_SECRETS), text


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=configs())
def test_any_spend_config_loads_or_is_one_config_error_line(raw: dict[str, Any]) -> None:
    try:
        start(raw)
    except ConfigError as error:
        check_config_error(error)


CHAT = {"id": "c1", "created": 1, "model": "m"}
CHOICE = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
DELTA = {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
TEXT = [{"type": "text", "text": "ok"}]
END = {"stop_reason": "end_turn", "stop_sequence": None}
NOT_FOUND = {
    "error": {"message": "no", "type": "invalid_request_error", "param": None, "code": None}
}


def upstream(request: httpx.Request) -> httpx.Response:
    """An openai-kind chat and an anthropic-kind Messages upstream, whole or streamed."""
    stream = json.loads(request.content).get("stream") is True
    if request.url.path.endswith("/chat/completions"):
        if not stream:
            whole = {**CHAT, "object": "chat.completion", "choices": [CHOICE], "usage": USAGE}
            return httpx.Response(200, json=whole)
        chunk = {**CHAT, "object": "chat.completion.chunk"}
        chunks = [{**chunk, "choices": [DELTA]}, {**chunk, "choices": [], "usage": USAGE}]
        return sse(b"".join(frame.encode() for frame in openai_frames(chunks)))
    if request.url.path.endswith("/v1/messages"):
        if not stream:
            whole = {**MESSAGE, **END, "content": TEXT, "usage": CLAUDE_USAGE}
            return httpx.Response(200, json=whole)
        start: dict[str, Any] = {**MESSAGE, **dict.fromkeys(END), "content": []}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": {**start, "usage": CLAUDE_USAGE}},
            {"type": "message_delta", "delta": END, "usage": {"output_tokens": 7}},
            {"type": "message_stop"},
        ]
        return sse(b"".join(frame.encode() for frame in anthropic_frames(events)))
    return httpx.Response(404, json=NOT_FOUND)


def sse(body: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def check_error(answer: httpx.Response, path: str) -> None:
    assert answer.status_code < 500, answer.text
    if answer.status_code < 400 or answer.request.method == "HEAD":
        return
    body = answer.json()
    if path == "/v1/messages":
        assert body["type"] == "error", body
        assert set(body["error"]) == {"type", "message"}, body
    else:
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["message"]


def run_fuzz(
    send: Callable[[httpx.AsyncClient, Any], Any], strategy: st.SearchStrategy[Any], examples: int
) -> None:
    """`send` per drawn example against one proxy on base_config(), its event loop kept."""
    with asyncio.Runner() as runner:
        context = serve(
            make_config(base_config()), transport=httpx.MockTransport(upstream), client_key=None
        )
        client = runner.run(context.__aenter__())
        try:

            @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
            @given(example=strategy)
            def one(example: Any) -> None:
                runner.run(send(client, example))

            one()
        finally:
            runner.run(context.__aexit__(None, None, None))


ODD_AUTH = ["Bearer unknown-key", "Basic x", "Bearer ", None]
auth_headers = st.sampled_from([*(f"Bearer {key}" for key in KEYS.values()), *ODD_AUTH]).map(
    lambda value: {} if value is None else {"authorization": value}
) | st.just({"x-api-key": ALICE})
spend_requests = st.tuples(
    st.sampled_from(["GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]),
    st.text(max_size=30) | st.sampled_from(["", "?key=bob", "?x=%00", "?%ff", "?a=1&" * 300]),
    auth_headers,
)


async def ask_spend(client: httpx.AsyncClient, example: tuple[str, str, dict[str, str]]) -> None:
    method, query, headers = example
    query = quote(query.removeprefix("?"), safe="=&%")
    query = f"?{query}" if query else ""
    answer = await client.request(method, "/v1/spend" + query, headers=headers)
    check_error(answer, "/v1/spend")
    if answer.status_code != 200 or method != "GET":
        return
    body = answer.json()
    assert set(body) == {"key", "spent_usd", "budgets"}, body
    scopes = [(view["scope"], view["name"]) for view in body["budgets"]]
    own = {"alice": [("key", "alice"), ("team", "research")], "bob": [("team", "research")]}
    assert scopes == [*own.get(body["key"], []), ("model", "mini")], body
    for view in body["budgets"]:
        assert min(view["spent_usd"], view["reserved_usd"]) >= 0, view
        assert math.isfinite(view["limit_usd"]), view


def test_no_spend_request_is_a_5xx_and_each_key_sees_its_own_budgets() -> None:
    run_fuzz(ask_spend, spend_requests, 150)


limits = st.one_of(st.none(), odd_numbers, st.integers(0, 5000))
shared = {"max_tokens": limits, "stream": st.one_of(st.booleans(), odd_numbers)}
models = st.sampled_from(["mini", "claude", "free", "oa/gpt-4o-mini"])
chat_bodies = st.fixed_dictionaries(
    {"model": models, "messages": st.just(HI)},
    optional={**shared, "max_completion_tokens": limits, "n": limits},
)
responses_bodies = st.fixed_dictionaries(
    {"model": models, "input": st.sampled_from(["hi", "x" * 3000])},
    optional={"max_output_tokens": limits, "stream": shared["stream"]},
)
messages_bodies = st.fixed_dictionaries({"model": models, "messages": st.just(HI)}, optional=shared)
priced_requests = st.one_of(
    st.tuples(st.just("/v1/chat/completions"), chat_bodies, auth_headers),
    st.tuples(st.just("/v1/responses"), responses_bodies, auth_headers),
    st.tuples(st.just("/v1/messages"), messages_bodies, auth_headers),
)


async def send_priced(
    client: httpx.AsyncClient, example: tuple[str, dict[str, Any], dict[str, str]]
) -> None:
    path, body, headers = example
    if path == "/v1/messages" and "authorization" in headers:
        headers = {"x-api-key": headers["authorization"].removeprefix("Bearer ")}
    answer = await client.post(path, json=body, headers=headers)
    check_error(answer, path)


def test_no_priced_request_under_budgets_is_a_5xx() -> None:
    run_fuzz(send_priced, priced_requests, 250)


@pytest.mark.parametrize(
    ("section", "value"),
    [
        (("server", "budgets", "mini"), {"usd": 1e300, "period": "day"}),
        (("server", "budgets", "mini"), {"usd": MAX_BUDGET * 1.001, "period": "day"}),
        (("models", 0, "price"), {"input": True, "output": 1}),
        (("models", 0, "price"), {"input": 1, "output": 2, "cache_write": False}),
        (("models", 0, "price"), {"input": 1e308, "output": 1e308}),
        (("server", "spend"), {"reserve_output_tokens": 10**400}),
    ],
)
def test_start_up_refuses_with_a_config_error(section: tuple[Any, ...], value: Any) -> None:
    raw = base_config()
    _set(section)(raw, value)
    with pytest.raises(ConfigError) as refused:
        start(raw)
    check_config_error(refused.value)


async def _one(raw: dict[str, Any], body: dict[str, Any]) -> httpx.Response:
    transport = httpx.MockTransport(upstream)
    async with serve(make_config(raw), transport=transport, client_key=ALICE) as client:
        return await client.post("/v1/chat/completions", json=body)


@pytest.mark.parametrize(
    ("section", "value", "more"),
    [
        (("models", 0, "price"), {"input": 1e6, "output": 1e6}, {"max_tokens": 10**9}),
        (("models", 0, "price"), {"input": 1e6, "output": 1e6}, {"max_tokens": 10**9, "n": 8}),
        (("server", "spend"), {"reserve_output_tokens": 10**9}, {}),
    ],
)
def test_the_largest_settings_are_a_429_not_a_500(
    section: tuple[Any, ...], value: Any, more: dict[str, Any]
) -> None:
    """The largest price and output the config takes: a worst case of 10^9 USD and more (8 x
    10^18 nano-dollars saturates to_nano) is refused by alice's budget, as any too big is."""
    raw = base_config()
    _set(section)(raw, value)
    answer = asyncio.run(_one(raw, {"model": "mini", "messages": HI, **more}))
    assert answer.status_code == 429, answer.text
    assert answer.json()["error"]["code"] == "budget_exceeded", answer.text


def test_a_settled_reservation_leaves_nothing_behind_in_memory() -> None:
    ledger = MemoryLedger(clock=lambda: 1_000_000.0)
    budgets = [Budget("key", "alice", 1.0, "day")]

    async def requests(count: int) -> None:
        for number in range(count):
            held = await ledger.reserve(1e-6, budgets, f"{number:016x}", 660.0, "alice")
            assert isinstance(held, Reservation)
            await ledger.settle(held, 0.0)

    asyncio.run(requests(100))  # the counter and the period's slot exist
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    asyncio.run(requests(20_000))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 256 * 1024, f"{grown} bytes kept by 20000 settled requests"
