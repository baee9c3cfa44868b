"""Budgets across replicas: two real proxy processes on one real Redis, the openai and
anthropic SDKs as clients, a mock upstream whose usage equals what each request reserved.

The property: N concurrent requests spread over both replicas admit exactly as many as the
budget holds, never one more and never a false refusal. A replica killed mid-stream leaves no
reservation after its (short, configured) expiry; a client that disconnects mid-stream is
settled at once; refusals carry the budget's retry-after; /v1/spend agrees on both."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.spend.periods import next_reset
from tests.e2e.conftest import PROVIDER_KEY, RunningProxy, run_proxy, sdk_client
from tests.helpers.mock_upstream import Exchange, MockUpstream, Reply, openai_frames

pytestmark = pytest.mark.e2e

ALICE = "alice-budget-SECRET-444"
BOB = "bob-budget-SECRET-555"
MAX_TOKENS = 100
COST = MAX_TOKENS * 1e-6  # output at 1 USD per million tokens, input free
HELD = 5
"""Requests the key's budget holds."""


def completion(body: dict[str, Any]) -> dict[str, Any]:
    tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    return {
        "id": "chatcmpl-budget",
        "object": "chat.completion",
        "created": 1,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens},
    }


def chunk(delta: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-budget",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}],
    }


class Upstream:
    """Non-stream requests: answered after `delay` with usage equal to their maximum (so all
    of a burst are in flight at once). Streams: two chunks, then the connection held open."""

    def __init__(self, delay: float = 0.5) -> None:
        self.delay = delay
        self.streams: list[Exchange] = []
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, exchange: Exchange) -> Reply | None:
        body = exchange.body
        if body.get("stream"):
            self.streams.append(exchange)
            frames = openai_frames(
                [chunk({"role": "assistant", "content": ""}), chunk({"content": "a"})]
            )
            return Reply(frames=frames, hang_after=2)
        with self.lock:
            self.count += 1
        return Reply(json=completion(body), delay=self.delay)


def config(redis_url: str, upstream: MockUpstream, prefix: str, **spend: Any) -> str:
    spend_yaml = ", ".join(f"{k}: {v}" for k, v in spend.items())
    return f"""
server:
  keys:
    - {{name: alice, key: {ALICE}, team: research, budget: {{usd: {COST * HELD}, period: day}}}}
    - {{name: bob, key: {BOB}, team: research}}
  teams:
    research: {{budget: {{usd: 1, period: week}}}}
  budgets:
    mini: {{usd: 2, period: month}}
  store: {{kind: redis, url: "{redis_url}", on_error: closed, prefix: "{prefix}"}}
  spend: {{{spend_yaml}}}
router: {{retries: 0}}
providers:
  oa:
    kind: openai
    base_url: "{upstream.base_url}/v1"
    api_key: {PROVIDER_KEY}
models:
  - {{name: mini, provider: oa, model: gpt-4o-mini, price: {{input: 0, output: 1.0}}}}
"""


@contextmanager
def cluster(
    redis_url: str, upstream: MockUpstream, tmp_path: Path, **spend: Any
) -> Iterator[list[RunningProxy]]:
    text = config(redis_url, upstream, f"budgets-{tmp_path.name}:", **spend)
    with ExitStack() as stack:
        replicas = []
        for name in ("one", "two"):
            directory = tmp_path / name
            directory.mkdir()
            replicas.append(stack.enter_context(run_proxy(text, directory)))
        yield replicas


def ask(proxy: RunningProxy, key: str = ALICE) -> int:
    client = sdk_client(proxy, api_key=key)
    try:
        client.chat.completions.create(
            model="mini", messages=[{"role": "user", "content": "hi"}], max_tokens=MAX_TOKENS
        )
    except openai.RateLimitError as refused:
        code = refused.code
    else:
        return 200
    assert code == "budget_exceeded"
    return 429


def spend(proxy: RunningProxy, key: str = ALICE) -> dict[str, Any]:
    response = httpx.get(f"{proxy.base_url}/spend", headers={"authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    return dict(response.json())


def budget(view: dict[str, Any], scope: str) -> dict[str, Any]:
    [found] = [b for b in view["budgets"] if b["scope"] == scope]
    return dict(found)


def wait_for(check: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def double() -> Iterator[tuple[MockUpstream, Upstream]]:
    answers = Upstream()
    with MockUpstream(screen=answers) as mock:
        yield mock, answers


@pytest.mark.parametrize("burst", [HELD + 7, HELD])
def test_concurrent_requests_over_two_replicas_admit_exactly_what_the_budget_holds(
    redis_url: str, tmp_path: Path, double: tuple[MockUpstream, Upstream], burst: int
) -> None:
    mock, answers = double
    with cluster(redis_url, mock, tmp_path) as replicas:
        targets = [replicas[i % 2] for i in range(burst)]
        with ThreadPoolExecutor(burst) as pool:
            statuses = list(pool.map(ask, targets))
        assert sorted(statuses) == [200] * HELD + [429] * (burst - HELD)
        assert answers.count == HELD  # the refused never reached the upstream
        views = [spend(replica) for replica in replicas]
        assert views[0] == views[1]
        assert views[0]["spent_usd"] == pytest.approx(COST * HELD, abs=1e-12)
        key = budget(views[0], "key")
        assert key["spent_usd"] == pytest.approx(COST * HELD, abs=1e-12)
        assert key["reserved_usd"] == 0
        # Bob's requests count against the team and the model, not Alice's budget.
        assert ask(replicas[1], BOB) == 200
        assert ask(replicas[0]) == 429


def test_a_replica_killed_mid_stream_leaves_no_reservation_after_its_expiry(
    redis_url: str, tmp_path: Path, double: tuple[MockUpstream, Upstream]
) -> None:
    mock, _ = double
    ttl = 2
    with cluster(redis_url, mock, tmp_path, reservation_ttl=ttl) as (one, two):
        with httpx.stream(
            "POST",
            f"{one.base_url}/chat/completions",
            headers={"authorization": f"Bearer {ALICE}"},
            json={
                "model": "mini",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": MAX_TOKENS * HELD,
                "stream": True,
            },
            timeout=10,
        ) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # kept: a dropped generator closes the response
            assert next(lines).startswith("data: ")
            killed_at = time.monotonic()
            assert budget(spend(two), "key")["reserved_usd"] == pytest.approx(COST * HELD)
            assert ask(two) == 429  # the whole budget is reserved
            assert one.process is not None
            one.process.kill()
            one.process.wait(5)
        assert budget(spend(two), "key")["reserved_usd"] == pytest.approx(COST * HELD)
        wait_for(lambda: budget(spend(two), "key")["reserved_usd"] == 0, ttl + 5)
        assert time.monotonic() - killed_at >= ttl - 0.5
        assert budget(spend(two), "key")["spent_usd"] == 0
        assert ask(two) == 200


def test_a_client_that_disconnects_mid_stream_is_settled(
    redis_url: str, tmp_path: Path, double: tuple[MockUpstream, Upstream]
) -> None:
    mock, answers = double
    with cluster(redis_url, mock, tmp_path) as (one, two):  # the default TTL: 660 s
        with httpx.stream(
            "POST",
            f"{one.base_url}/chat/completions",
            headers={"authorization": f"Bearer {ALICE}"},
            json={
                "model": "mini",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": MAX_TOKENS * HELD,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
            timeout=10,
        ) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")
            assert budget(spend(two), "key")["reserved_usd"] == pytest.approx(COST * HELD)
        assert answers.streams[0].closed.wait(5)  # the proxy hung up on the upstream
        wait_for(lambda: budget(spend(two), "key")["reserved_usd"] == 0, 5)
        assert [ask(two) for _ in range(HELD)] == [200] * HELD


def test_refusals_name_the_budget_and_when_it_resets(
    redis_url: str, tmp_path: Path, double: tuple[MockUpstream, Upstream]
) -> None:
    mock, _ = double
    with cluster(redis_url, mock, tmp_path) as (one, two):
        assert [ask(one) for _ in range(HELD)] == [200] * HELD
        before = datetime.now(UTC)
        client = sdk_client(two, api_key=ALICE)
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(
                model="mini", messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
        claude = anthropic.Anthropic(
            base_url=f"http://127.0.0.1:{one.port}", api_key=ALICE, max_retries=0
        )
        with pytest.raises(anthropic.RateLimitError) as anthropic_refused:
            claude.messages.create(
                model="mini", max_tokens=1, messages=[{"role": "user", "content": "hi"}]
            )
        after = datetime.now(UTC)
    reset = next_reset("day", before)
    assert reset is not None
    window = range(
        math.ceil((reset - after).total_seconds()), math.ceil((reset - before).total_seconds()) + 1
    )
    error = refused.value
    assert (error.code, error.type) == ("budget_exceeded", "insufficient_quota")
    assert "the key budget 'alice'" in error.message
    assert ALICE not in error.message
    assert int(error.response.headers["retry-after"]) in window
    assert anthropic_refused.value.status_code == 429
    body = anthropic_refused.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "rate_limit_error"
    assert int(anthropic_refused.value.response.headers["retry-after"]) in window
