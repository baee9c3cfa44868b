"""Routing by tool-call quality end to end: the real `openai` SDK against a real proxy process
whose model `smart` is served by two mock deployments, one whose calls break the schema. With
`on_invalid: fallback` the bad answer is never relayed while the good deployment, then the
`fallbacks`, can answer (streamed or not); when none validates the last answer goes out as
`pass` would. Below `min_valid_rate` the bad deployment is cooled down (one log line, a
counter, a gauge on /metrics), traffic moves off it and comes back after the cooldown. Two
proxies on one Redis share a deployment's window."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.openai_types import chat_request_from_wire
from app.routing.affinity import conversation_key, deployment_seed, rendezvous
from tests.e2e.conftest import CLIENT_KEY, PROVIDER_KEY, RunningProxy, run_proxy, sdk_client
from tests.e2e.test_tool_quality_sdk import (
    BAD_ARGUMENTS,
    GOOD_ARGUMENTS,
    MESSAGES,
    chunks,
    completion,
)
from tests.helpers.mock_upstream import Exchange, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import TOOLS

pytestmark = pytest.mark.e2e

BAD = "smart#0:bad/m"
GOOD = "smart#1:good/m"


def answering(arguments: str) -> Callable[[Exchange], Reply]:
    """A deployment that always calls get_weather with these arguments, streamed or not."""

    def reply(exchange: Exchange) -> Reply:
        calls = [("get_weather", arguments)]
        if exchange.body.get("stream"):
            return Reply(frames=openai_frames(chunks(None, calls)))
        return Reply(json=completion(None, calls))

    return reply


@pytest.fixture(scope="module")
def bad() -> Iterator[MockUpstream]:
    with MockUpstream(screen=answering(BAD_ARGUMENTS)) as server:
        yield server


@pytest.fixture(scope="module")
def good() -> Iterator[MockUpstream]:
    with MockUpstream(screen=answering(GOOD_ARGUMENTS)) as server:
        yield server


def config(bad: MockUpstream, good: MockUpstream, models: str, server: str = "") -> str:
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
  log: {{format: json}}
{server}
router:
  retries: 0
  cooldown: {{seconds: 2}}
providers:
  bad: {{kind: openai, base_url: "{bad.base_url}/v1", api_key: {PROVIDER_KEY}}}
  good: {{kind: openai, base_url: "{good.base_url}/v1", api_key: {PROVIDER_KEY}}}
models:
{models}
"""


SMART = """  - name: smart
    deployments: [{provider: bad, model: m}, {provider: good, model: m}]
    tool_calls: {on_invalid: fallback, min_valid_rate: 0.9, window: 10}
"""
ALL_BAD = """  - name: smart
    deployments: [{provider: bad, model: m}, {provider: bad, model: m2}]
    fallbacks: [backup]
    tool_calls: {on_invalid: fallback}
  - {name: backup, provider: PROVIDER, model: m}
"""


@pytest.fixture(autouse=True)
def _fresh(bad: MockUpstream, good: MockUpstream) -> None:
    bad.exchanges.clear()
    good.exchanges.clear()


def homed(deployments: list[str], index: int) -> str:
    """A `prompt_cache_key` whose conversation's home (app/routing/affinity.py, weights 1) is
    `deployments[index]`: the request goes there first."""
    seeds = [(deployment_seed(key), 1) for key in deployments]
    for n in range(100):
        wire = {"model": "smart", "messages": MESSAGES, "prompt_cache_key": f"conversation-{n}"}
        if rendezvous(conversation_key(chat_request_from_wire(wire)) or 0, seeds) == index:
            return str(wire["prompt_cache_key"])
    raise AssertionError("no conversation homed there")


ON_BAD, ON_GOOD = homed([BAD, GOOD], 0), homed([BAD, GOOD], 1)


def ask(
    client: openai.OpenAI, *, stream: bool, model: str = "smart", key: str = ON_BAD
) -> tuple[Any, dict[str, str]]:
    """The answer's calls as (name, arguments) and the response headers. `key`: the
    conversation's prompt_cache_key, which picks the deployment asked first."""
    create = client.chat.completions.with_raw_response.create
    raw = create(
        model=model,
        messages=MESSAGES,
        tools=TOOLS,
        stream=stream,
        extra_body={"prompt_cache_key": key},
    )
    headers = dict(raw.headers)
    if not stream:
        message = raw.parse().choices[0].message
        return [(c.function.name, c.function.arguments) for c in message.tool_calls], headers
    arguments: dict[int, str] = {}
    names: dict[int, str] = {}
    for chunk in raw.parse():
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            names[delta.index] = names.get(delta.index, "") + (delta.function.name or "")
            arguments[delta.index] = arguments.get(delta.index, "") + (
                delta.function.arguments or ""
            )
    return [(names[i], arguments[i]) for i in sorted(names)], headers


def metrics(proxy: RunningProxy) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(f"http://127.0.0.1:{proxy.port}/metrics", timeout=5).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def log_events(proxy: RunningProxy, event: str) -> list[dict[str, Any]]:
    lines = [
        json.loads(line) for line in proxy.log.read_text().splitlines() if line.startswith("{")
    ]
    return [line for line in lines if line.get("event") == event]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_broken_call_falls_back_to_the_other_deployment(
    bad: MockUpstream, good: MockUpstream, tmp_path: Path, stream: bool
) -> None:
    with run_proxy(config(bad, good, SMART), tmp_path) as proxy, sdk_client(proxy) as client:
        calls, headers = ask(client, stream=stream)
        assert calls == [("get_weather", GOOD_ARGUMENTS)]
        assert len(bad.exchanges) == 1  # asked first (the conversation's home), not relayed
        assert len(good.exchanges) == 1
        assert headers["x-toolrelay-model"] == "smart"
        if not stream:
            assert headers["x-toolrelay-tool-calls"] == "ok=1"
        moved = log_events(proxy, "tool_call_fallback")
        assert [(m["deployment"], m["reason"], m["next"]) for m in moved] == [
            (BAD, "invalid_tool_call", "deployment")
        ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_when_every_deployment_breaks_the_fallback_model_answers(
    bad: MockUpstream, good: MockUpstream, tmp_path: Path, stream: bool
) -> None:
    models = ALL_BAD.replace("PROVIDER", "good")
    with run_proxy(config(bad, good, models), tmp_path) as proxy, sdk_client(proxy) as client:
        calls, headers = ask(
            client, stream=stream, key=homed(["smart#0:bad/m", "smart#1:bad/m2"], 0)
        )
        assert calls == [("get_weather", GOOD_ARGUMENTS)]
        assert [e.body["model"] for e in bad.exchanges] == ["m", "m2"]
        assert headers["x-toolrelay-model"] == "backup"
        found = metrics(proxy)
        fallbacks = (
            "toolrelay_fallbacks_total",
            frozenset({"model": "smart", "fallback": "backup"}.items()),
        )
        assert found[fallbacks] == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_when_no_answer_validates_the_last_is_relayed_as_pass_would(
    bad: MockUpstream, good: MockUpstream, tmp_path: Path, stream: bool
) -> None:
    models = ALL_BAD.replace("PROVIDER", "bad")
    with run_proxy(config(bad, good, models), tmp_path) as proxy, sdk_client(proxy) as client:
        calls, headers = ask(client, stream=stream)
        assert calls == [("get_weather", BAD_ARGUMENTS)]
        assert len(bad.exchanges) == 3  # smart's two deployments, then backup's
        assert not good.exchanges
        assert headers["x-toolrelay-model"] == "backup"
        if not stream:
            assert headers["x-toolrelay-tool-calls"] == "schema_mismatch=1"


def test_a_low_rate_cools_the_bad_deployment_down_and_traffic_comes_back(
    bad: MockUpstream, good: MockUpstream, tmp_path: Path
) -> None:
    """Every answer validates throughout; the bad deployment is asked first by every other
    request (a conversation homed on it) until 10 of its calls were judged, then not at all,
    then again after the cooldown."""
    with run_proxy(config(bad, good, SMART), tmp_path) as proxy, sdk_client(proxy) as client:
        for turn in range(20):
            calls, _ = ask(client, stream=turn % 2 == 1, key=(ON_BAD, ON_GOOD)[turn % 2])
            assert calls == [("get_weather", GOOD_ARGUMENTS)]
        assert len(bad.exchanges) == 10
        rate = (
            "toolrelay_deployment_valid_rate",
            frozenset({"model": "smart", "deployment": BAD}.items()),
        )
        cooled = (
            "toolrelay_quality_cooldowns_total",
            frozenset({"model": "smart", "deployment": BAD}.items()),
        )
        good_rate = (
            "toolrelay_deployment_valid_rate",
            frozenset({"model": "smart", "deployment": GOOD}.items()),
        )
        found = metrics(proxy)
        assert (found[rate], found[cooled], found[good_rate]) == (0.0, 1.0, 1.0)
        [line] = log_events(proxy, "quality_cooldown")
        assert (line["model"], line["deployment"], line["rate"]) == ("smart", BAD, 0.0)
        for _ in range(6):  # cooling down: the good deployment takes everything
            assert ask(client, stream=False)[0] == [("get_weather", GOOD_ARGUMENTS)]
        assert len(bad.exchanges) == 10
        time.sleep(2.2)  # router.cooldown.seconds
        for key in (ON_BAD, ON_GOOD):
            assert ask(client, stream=False, key=key)[0] == [("get_weather", GOOD_ARGUMENTS)]
        assert len(bad.exchanges) == 11  # back in the rotation (and judged afresh)
        assert len(log_events(proxy, "quality_cooldown")) == 1


def shared_redis(redis_url: str) -> str:
    return f'  store: {{kind: redis, url: "{redis_url}"}}'


def test_two_proxies_on_one_redis_agree_on_a_deployment_rate(
    bad: MockUpstream, good: MockUpstream, tmp_path: Path, redis_url: str
) -> None:
    """One window per deployment in Redis: what one replica judged, the other counts on."""
    models = """  - name: smart
    deployments: [{provider: bad, model: m}]
    tool_calls: {on_invalid: pass, window: 20}
"""
    text = config(bad, good, models, shared_redis(redis_url))
    with ExitStack() as stack:
        proxies = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            proxies.append(stack.enter_context(run_proxy(text, tmp_path / name)))
        first, second = (stack.enter_context(sdk_client(p)) for p in proxies)
        key = (
            "toolrelay_deployment_valid_rate",
            frozenset({"model": "smart", "deployment": "smart#0:bad/m"}.items()),
        )
        for _ in range(3):
            ask(first, stream=False)
        wait_for(lambda: metrics(proxies[0]).get(key) == 0.0)
        bad_screen = bad._screen
        bad._screen = answering(GOOD_ARGUMENTS)
        try:
            ask(second, stream=False)
            # the second proxy judged one call itself, and counts the first's three with it
            wait_for(lambda: metrics(proxies[1]).get(key) == 0.25)
            ask(first, stream=True)
            wait_for(lambda: metrics(proxies[0]).get(key) == 0.4)
        finally:
            bad._screen = bad_screen


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """The shared count is updated just after the answer: poll briefly."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)
