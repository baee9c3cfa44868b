"""x-toolrelay-overhead-ms is never below zero (issue 29), whichever clock the event loop
keeps: the waits on upstreams are read from the request's own clock, not the loop's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from tests.helpers.mock_upstream import openai_frames
from tests.helpers.upstream_answers import openai_text_chunks, openai_tool_completion
from tests.integration.conftest import OPENAI_URL, chat, sse_response

pytestmark = pytest.mark.anyio

_SPEED = 100.0
"""The loop's clock runs this much faster than real time: like uvloop's whole-millisecond
clock, it reads more than the request's own clock for the same wait (the default timeouts, 600
s of it, are still 6 s of real time)."""


@pytest.fixture
async def fast_loop_clock(anyio_backend: str) -> AsyncIterator[None]:
    loop = asyncio.get_running_loop()
    loop.time = lambda: time.monotonic() * _SPEED  # type: ignore[method-assign]
    try:
        yield
    finally:
        del loop.time


def _overhead(response: httpx.Response) -> float:
    assert response.status_code == 200, response.text
    return float(response.headers["x-toolrelay-overhead-ms"])


@pytest.mark.parametrize("stream", [False, True])
async def test_overhead_is_never_negative(
    proxy: httpx.AsyncClient, upstream: respx.Router, fast_loop_clock: None, stream: bool
) -> None:
    if stream:
        frames = openai_frames(openai_text_chunks("Hi"))
        upstream.post(OPENAI_URL).mock(side_effect=lambda _: sse_response(frames))
    else:
        upstream.post(OPENAI_URL).respond(200, json=openai_tool_completion())
    response = await proxy.post("/v1/chat/completions", json=chat(stream=stream))
    assert _overhead(response) >= 0
