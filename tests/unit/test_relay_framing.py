"""The relay's framing seam: a kind may bring its own stream framing (Translator.framing, as
Bedrock's binary event stream will), and the relay then decodes every read with it, however
the reads are cut, takes no SSE fast path, and ends in the error event when the framing says
the stream ended mid-frame. Shown with a toy framing (one JSON event a line)."""

from __future__ import annotations

import dataclasses
import random

import orjson
import pytest

from app.errors import UpstreamProtocolError
from app.openai_types import parse_chat_request
from app.relay.streaming import StreamOptions, open_stream
from app.sse import SSEEvent
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext, Translator, UpstreamRequest
from tests.helpers.upstream_answers import openai_tool_chunks
from tests.unit.test_relay_pass_through import Client

pytestmark = pytest.mark.anyio

REQUEST = parse_chat_request(
    orjson.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
)


class LineFraming:
    """One event a line, its payload the line: not SSE, so only this decoder can read it."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        return [SSEEvent(data=line.decode()) for line in lines]

    def flush(self) -> list[SSEEvent]:
        if self._buffer:
            raise UpstreamProtocolError("The upstream stream ended inside a frame.")
        return []


LINED = dataclasses.replace(TRANSLATORS["openai"], framing=LineFraming)


async def client_bytes(translator: Translator, reads: list[bytes]) -> bytes:
    ctx = ResponseContext("chatcmpl-framing", 1, "m", REQUEST)
    upstream = UpstreamRequest("http://upstream.test/v1/chat/completions", {}, b"", True)
    options = StreamOptions("p", str)
    frames = await open_stream(Client(reads), upstream, translator, ctx, options)
    return b"".join([frame async for frame in frames])


def cut(body: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(body)), 12))
    return [body[start:end] for start, end in zip([0, *points], [*points, len(body)], strict=True)]


@pytest.mark.parametrize("seed", range(5))
async def test_a_kinds_own_framing_decodes_every_read_as_sse_would(seed: int) -> None:
    chunks = openai_tool_chunks()
    lined = b"".join(orjson.dumps(chunk) + b"\n" for chunk in chunks) + b"[DONE]\n"
    sse = b"".join(b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks)
    sse += b"data: [DONE]\n\n"
    expected = await client_bytes(TRANSLATORS["openai"], [sse])
    assert await client_bytes(LINED, cut(lined, seed)) == expected
    assert b"call_weather_01" in expected


async def test_the_framing_ending_mid_frame_is_the_error_event() -> None:
    chunks = openai_tool_chunks()
    lined = b"".join(orjson.dumps(chunk) + b"\n" for chunk in chunks[:3]) + b'{"id": "half'
    sent = await client_bytes(LINED, [lined])
    assert sent.endswith(b"\n\n")
    last = orjson.loads(sent.split(b"\n\n")[-2].removeprefix(b"data: "))
    assert "inside a frame" in last["error"]["message"]
