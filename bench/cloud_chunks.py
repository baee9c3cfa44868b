"""Our per-chunk code for a Bedrock stream against the same answer from an anthropic-kind
upstream, in-process (issue 30's budget: a Bedrock chunk <= 1.3x an anthropic one): a tool call
whose arguments come in N fragments, each upstream event in its own read as at c=8, through
the kind's framing decoder (Bedrock's binary event stream, Anthropic's SSE), its stream
translator and the chat encoder, as the relay runs them. No network, no server.

Run: python -m bench.cloud_chunks"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from app.openai_types import parse_chat_request
from app.relay.streaming import NO_LIMITS, StreamOptions, _Relay
from app.relay.upstream import LocalAnswer
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext
from bench.chunk_path import best_us
from bench.payload import openai_request
from tests.helpers.bedrock_eventstream import event_frame

LONG, SHORT = 50, 10
REPEATS = 15
FRAGMENT = '"abcdefghij",'


def anthropic_reads(fragments: int) -> list[bytes]:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        },
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in _fragments(fragments)
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def bedrock_reads(fragments: int) -> list[bytes]:
    padding = "abcdefghijklmnopqrstuvwxyzABCDEF"  # Bedrock pads every payload (`p`)
    events = [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockStart",
            {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
            },
        ),
        *(
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": part}}})
            for part in _fragments(fragments)
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
        (
            "metadata",
            {
                "usage": {"inputTokens": 10, "outputTokens": 30, "totalTokens": 40},
                "metrics": {"latencyMs": 100},
            },
        ),
    ]
    return [event_frame(name, json.dumps({**body, "p": padding}).encode()) for name, body in events]


def _fragments(count: int) -> list[str]:
    return ['{"city": [', *([FRAGMENT] * (count - 2)), '"x"]}']


def runner(kind: str, fragments: int) -> Callable[[], Awaitable[None]]:
    request = parse_chat_request(openai_request("bench-openai", stream=True))
    translator = TRANSLATORS[kind]
    reads = (bedrock_reads if kind == "bedrock" else anthropic_reads)(fragments)
    options = StreamOptions("mock", str, NO_LIMITS)

    async def one() -> None:
        ctx = ResponseContext("chatcmpl-x", 1, "bench", request)
        relay = _Relay(
            LocalAnswer(200, {}, reads),
            translator.stream(ctx),
            translator.framing(),
            options,
            "bench",
        )
        first = await relay.first_frames()
        async for _ in relay.frames(first):
            pass

    return one


async def per_chunk(kind: str) -> float:
    long, short = runner(kind, LONG), runner(kind, SHORT)
    for _ in range(20):
        await long()
        await short()
    longs, shorts = [], []
    for _ in range(REPEATS):
        longs.append(await best_us(long))
        shorts.append(await best_us(short))
    return (min(longs) - min(shorts)) / (LONG - SHORT)


async def main() -> None:
    figures = {}
    for _ in range(2):  # the kinds taking turns
        for kind in ("anthropic", "bedrock"):
            figures.setdefault(kind, []).append(await per_chunk(kind))
    anthropic, bedrock = min(figures["anthropic"]), min(figures["bedrock"])
    print(f"anthropic: {anthropic:.2f} us per chunk")  # noqa: T201
    print(f"bedrock:   {bedrock:.2f} us per chunk ({bedrock / anthropic:.2f}x, budget 1.3x)")  # noqa: T201


if __name__ == "__main__":
    asyncio.run(main())
