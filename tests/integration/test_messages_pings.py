"""A Messages API stream whose upstream goes silent gets `ping` events in the meantime (so
clients and the proxies between them do not drop it), between whole events, and none once
the upstream speaks again often enough."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.main import create_app
from tests.helpers.anthropic_stream import assert_anthropic_stream, parse_anthropic_sse
from tests.helpers.mock_upstream import openai_frames
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import CLIENT_KEY, make_config

pytestmark = pytest.mark.anyio
SILENCE = 0.5
PING_SECONDS = 0.1


class SilentMidway(httpx.AsyncByteStream):
    """The first two frames, a silence, then the rest."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for position, frame in enumerate(self.frames):
            if position == 2:
                await asyncio.sleep(SILENCE)
            yield frame


def answer(request: httpx.Request) -> httpx.Response:
    frames = [frame.encode() for frame in openai_frames(openai_text_chunks("Hel", "lo."))]
    headers = {"content-type": "text/event-stream"}
    return httpx.Response(200, headers=headers, stream=SilentMidway(frames))


async def test_a_silent_upstream_gets_pings_between_events(anyio_backend: str) -> None:
    app = create_app(make_config(), transport=httpx.MockTransport(answer))
    body: dict[str, Any] = {"model": "mini", "max_tokens": 10, "stream": True}
    body["messages"] = [{"role": "user", "content": "hi"}]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        app.state.proxy.ping_seconds = PING_SECONDS
        response = await client.post("/v1/messages", json=body, headers={"x-api-key": CLIENT_KEY})
    events = parse_anthropic_sse(response.content)
    pings = [position for position, event in enumerate(events) if event["type"] == "ping"]
    assert len(pings) >= 2  # about SILENCE / PING_SECONDS of them
    assert min(pings) > 0  # after message_start
    rebuilt = assert_anthropic_stream(events)
    assert rebuilt["content"] == [{"type": "text", "text": "Hello."}]
