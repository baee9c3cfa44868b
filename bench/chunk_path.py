"""Our own per-chunk code, in-process: the bench's OpenAI stream (the mock's exact event
bytes, one upstream read per event as at c=8) through the SSE decoder, the openai-kind stream
translator, the tool-call audit and the chat encoder, as the relay runs them. No network, no
server: the part of a chunk's CPU that is ours alone, to compare changes to it.

Run: python -m bench.chunk_path"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from app.config import ToolCallsConfig
from app.openai_types import parse_chat_request
from app.relay.streaming import NO_LIMITS, StreamOptions, _Relay
from app.relay.upstream import LocalAnswer
from app.sse import SSEDecoder
from app.toolcalls.plan import plan_for
from app.toolcalls.stream import AuditedStream
from app.toolcalls.validation import Validators
from app.translators.base import ResponseContext
from app.translators.openai.stream import OpenAIStream
from bench.mock_bodies import openai_events
from bench.payload import openai_request

ARG_CHUNKS = 50
ROUNDS = 100
REPEATS = 15


def stream_runner(arg_chunks: int) -> Callable[[], Awaitable[None]]:
    """One relayed stream of the mock's events, from the first read to the last frame."""
    request = parse_chat_request(openai_request("bench-openai", stream=True))
    plan = plan_for(request, ToolCallsConfig())
    assert plan is not None
    validators = Validators()
    events = openai_events(arg_chunks, include_usage=False)
    options = StreamOptions("mock", str, NO_LIMITS)

    async def one() -> None:
        ctx = ResponseContext("chatcmpl-x", 1, "bench-openai", request)
        stream = AuditedStream(
            OpenAIStream(ctx), plan=plan, validators=validators, on_audit=lambda audit: None
        )
        relay = _Relay(LocalAnswer(200, {}, events), stream, SSEDecoder(), options, "bench-openai")
        first = await relay.first_frames()
        async for _ in relay.frames(first):
            pass

    return one


async def best_us(one: Callable[[], Awaitable[None]]) -> float:
    """Microseconds per stream, the best of ROUNDS-stream batches (the least disturbed)."""
    started = time.process_time()
    for _ in range(ROUNDS):
        await one()
    return (time.process_time() - started) / ROUNDS * 1e6


async def measure() -> tuple[float, float]:
    long, short = stream_runner(ARG_CHUNKS), stream_runner(10)
    for _ in range(20):
        await long()
        await short()
    longs, shorts = [], []
    for _ in range(REPEATS):  # taking turns, so a busy moment hits both
        longs.append(await best_us(long))
        shorts.append(await best_us(short))
    return min(longs), min(shorts)


def main() -> None:
    long, short = asyncio.run(measure())
    print(f"per stream: {long:.1f} us ({ARG_CHUNKS} argument deltas), {short:.1f} us (10)")  # noqa: T201
    print(f"per chunk: {(long - short) / (ARG_CHUNKS - 10):.2f} us")  # noqa: T201


if __name__ == "__main__":
    main()
