"""The real proxy process between real clients and a real local upstream: clients that hang
up, a shutdown with a stream in flight, and fifty concurrent streams through the OpenAI SDK
against an upstream that fails at random points."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.e2e.conftest import CLIENT_KEY, PROVIDER_KEY, RunningProxy, run_proxy
from tests.helpers.mock_upstream import Exchange, Frame, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import CALLS, TOOLS, openai_text_chunks, openai_tool_chunks

pytestmark = pytest.mark.e2e

USER = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
HEADERS = {"authorization": f"Bearer {CLIENT_KEY}"}


def config(upstream: MockUpstream, shutdown_grace: int = 5) -> str:
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
  shutdown_grace: {shutdown_grace}
router: {{retries: 2, backoff: 0.01}}
providers:
  oa:
    kind: openai
    base_url: {upstream.base_url}/v1
    api_key: {PROVIDER_KEY}
models:
  - {{name: mini, provider: oa, model: gpt-mini}}
"""


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[MockUpstream, RunningProxy]]:
    with MockUpstream() as upstream, run_proxy(config(upstream), tmp_path) as proxy:
        yield upstream, proxy


def slow_frames(count: int, delay: float) -> list[Frame]:
    parts = [f"part{n} " for n in range(count)]
    return [Frame(f.data, delay=delay) for f in openai_frames(openai_text_chunks(*parts))]


def test_a_client_hanging_up_mid_stream_closes_the_upstream_at_once(
    proxied: tuple[MockUpstream, RunningProxy],
) -> None:
    upstream, proxy = proxied
    upstream.add(Reply(frames=slow_frames(40, 0.1)))  # ~4 s if read to the end
    request = {"model": "mini", "messages": USER, "stream": True}
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST", f"{proxy.base_url}/chat/completions", json=request, headers=HEADERS
        ) as response,
    ):
        assert response.status_code == 200
        next(response.iter_raw())
    hung_up = time.monotonic()

    (exchange,) = upstream.exchanges
    assert exchange.closed.wait(2), "the upstream connection outlived the client"
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - hung_up < 1.0
    assert len(exchange.sent_at) < 20, "the stream was not relayed on for nobody"

    upstream.add(Reply(frames=openai_frames(openai_text_chunks("again"))))
    after = httpx.post(f"{proxy.base_url}/chat/completions", json=request, headers=HEADERS)
    assert after.status_code == 200
    assert after.text.endswith("data: [DONE]\n\n")


def test_a_client_giving_up_on_a_non_stream_request_closes_the_upstream(
    proxied: tuple[MockUpstream, RunningProxy],
) -> None:
    upstream, proxy = proxied
    upstream.add(Reply(json={}, delay=5))
    request = {"model": "mini", "messages": USER}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{proxy.base_url}/chat/completions", json=request, headers=HEADERS, timeout=0.5)
    gave_up = time.monotonic()

    (exchange,) = upstream.exchanges
    assert exchange.closed.wait(2), "the upstream call ran on after the client left"
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - gave_up < 1.0


@contextmanager
def stream_then_terminate(proxy: RunningProxy) -> Iterator[Iterator[bytes]]:
    """A stream under way (its first piece read) when the proxy gets SIGTERM; yields the rest
    of the body as it comes, the first piece included."""
    assert proxy.process is not None
    request = {"model": "mini", "messages": USER, "stream": True}
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "POST", f"{proxy.base_url}/chat/completions", json=request, headers=HEADERS
        ) as response,
    ):
        pieces = response.iter_raw()
        first = next(pieces)
        proxy.process.send_signal(signal.SIGTERM)
        yield itertools.chain([first], pieces)


def test_shutdown_lets_a_stream_in_flight_finish(
    proxied: tuple[MockUpstream, RunningProxy],
) -> None:
    upstream, proxy = proxied
    upstream.add(Reply(frames=slow_frames(10, 0.1)))
    with stream_then_terminate(proxy) as pieces:
        body = b"".join(pieces)

    assert proxy.process is not None
    assert body.endswith(b"data: [DONE]\n\n")
    assert b"part9" in body
    # uvicorn re-raises the SIGTERM it caught once its shutdown is done: -15 is a clean exit.
    assert proxy.process.wait(5) in (0, -signal.SIGTERM)
    assert "Finished server process" in proxy.log.read_text()


def test_shutdown_closes_what_outlasts_the_grace_period(tmp_path: Path) -> None:
    with MockUpstream() as upstream, run_proxy(config(upstream, 1), tmp_path) as proxy:
        upstream.add(Reply(frames=slow_frames(50, 0.1)))  # ~5 s
        received = []
        with stream_then_terminate(proxy) as pieces:
            signalled = time.monotonic()
            with pytest.raises(httpx.RemoteProtocolError):  # cut: no terminating chunk
                received.extend(pieces)
        assert proxy.process is not None
        assert proxy.process.wait(5) in (0, -signal.SIGTERM)
        assert time.monotonic() - signalled < 3
        (exchange,) = upstream.exchanges
        assert exchange.closed.wait(2), "the upstream stream was closed, not left open"
    assert received, "the stream was under way"
    assert not b"".join(received).endswith(b"data: [DONE]\n\n")


EXPECTED_CALLS = [(name, arguments) for _, name, arguments in CALLS]


class FlakyUpstream:
    """Decides each request's fate at random (seeded): answered, refused with a 5xx, reset
    before the first byte, or cut off in the middle of its stream."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.fates: list[str] = []

    def __call__(self, exchange: Exchange) -> Reply:
        frames = [Frame(f.data, delay=0.003) for f in openai_frames(openai_tool_chunks())]
        roll = self.random.random()
        if roll < 0.15:
            fate, reply = "503", Reply(503, json={"error": {"message": "busy"}})
        elif roll < 0.3:
            fate, reply = "reset", Reply(reset=True)
        elif roll < 0.45:
            cut = self.random.randrange(2, len(frames) - 1)
            fate, reply = "cut", Reply(frames=frames, drop_after=cut)
        else:
            fate, reply = "ok", Reply(frames=frames)
        self.fates.append(fate)
        return reply


async def _one_stream(client: openai.AsyncOpenAI) -> tuple[str, Any]:
    """("complete", calls) when the stream ended normally, ("error", message) when the client
    was told it failed."""
    calls: dict[int, list[str]] = {}
    finish_reasons = []
    try:
        stream = await client.chat.completions.create(
            model="mini",
            messages=USER,
            tools=TOOLS,
            stream=True,  # type: ignore[arg-type]
        )
        async for chunk in stream:
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    entry = calls.setdefault(delta.index, ["", ""])
                    entry[0] += (delta.function and delta.function.name) or ""
                    entry[1] += (delta.function and delta.function.arguments) or ""
                if choice.finish_reason:
                    finish_reasons.append(choice.finish_reason)
    except openai.APIError as error:
        return "error", error.message
    return "complete", (finish_reasons, [tuple(calls[i]) for i in sorted(calls)])


def test_fifty_concurrent_streams_through_a_flaky_upstream_are_whole_or_errors(
    tmp_path: Path,
) -> None:
    flaky = FlakyUpstream(seed=7)
    with MockUpstream(screen=flaky) as upstream, run_proxy(config(upstream), tmp_path) as proxy:

        async def run_all() -> list[tuple[str, Any]]:
            async with openai.AsyncOpenAI(
                base_url=proxy.base_url, api_key=CLIENT_KEY, max_retries=0, timeout=20
            ) as client:
                return await asyncio.gather(*(_one_stream(client) for _ in range(50)))

        results = asyncio.run(run_all())

    complete = [outcome for kind, outcome in results if kind == "complete"]
    errors = [outcome for kind, outcome in results if kind == "error"]
    assert len(complete) + len(errors) == 50
    for finish_reasons, calls in complete:
        assert finish_reasons == ["tool_calls"]
        assert calls == EXPECTED_CALLS
        for _, arguments in calls:
            json.loads(arguments)
    for message in errors:
        assert message, "every failure reaches the client with a message"
    assert flaky.fates.count("cut") >= 1, "the seed must exercise mid-stream failures"
    assert len(errors) >= 1
    assert len(complete) >= 30, "503s and resets before the first byte are retried"
