"""Our per-chunk code for an Azure OpenAI stream against the same answer from an openai-kind
upstream, in-process (issue 30: Azure's additions removed, at close to the openai kind's cost).

Azure's stream is the recorded shape (tests/transcripts/azure/*_stream: a first chunk of
`prompt_filter_results` with no choices, then `content_filter_results` beside every delta, the
full categories beside text, `{}` beside a tool call's fragments, keys in Azure's order); the
openai kind's is the same chunks without those additions. Each upstream event is its own read
(as at c=8), through the SSE decoder, the relay's pass-through, the stream translator, the
tool-call audit and the chat encoder, as the relay runs them. No network, no server.

Run: python -m bench.azure_chunks"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from app.config import ProviderConfig, ToolCallsConfig
from app.openai_types import parse_chat_request
from app.relay.streaming import NO_LIMITS, StreamOptions, _Relay
from app.relay.upstream import LocalAnswer
from app.toolcalls.plan import plan_for
from app.toolcalls.stream import AuditedStream
from app.toolcalls.validation import Validators
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext, Target
from bench.chunk_path import best_us
from bench.payload import openai_request

LONG, SHORT = 50, 10
REPEATS = 15
SAFE = {"filtered": False, "severity": "safe"}
TEXT_FILTER = {"hate": SAFE, "self_harm": SAFE, "sexual": SAFE, "violence": SAFE}
PROMPT_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [
        {
            "prompt_index": 0,
            "content_filter_results": {
                **TEXT_FILTER,
                "jailbreak": {"filtered": False, "detected": False},
            },
        }
    ],
}


def _chunk(kind: str, delta: dict[str, Any], finish: str | None, filter_results: Any) -> bytes:
    choice: dict[str, Any] = {"delta": delta, "finish_reason": finish, "index": 0, "logprobs": None}
    if kind == "azure":
        choice = {"content_filter_results": filter_results, **choice}
    chunk = {
        "choices": [choice],
        "created": 1745934107,
        "id": "chatcmpl-BQm3kXdhQ6ZcR2Lq8yT0vNw5JpA1e",
        "model": "gpt-4o-2024-11-20",
        "object": "chat.completion.chunk",
        "system_fingerprint": "fp_ee1d74bde0",
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def reads(kind: str, shape: str, count: int) -> list[bytes]:
    """One stream: the role, `count` text deltas or argument fragments of one call, the finish."""
    head = [b"data: " + json.dumps(PROMPT_FILTER, separators=(",", ":")).encode() + b"\n\n"]
    events = head if kind == "azure" else []
    events.append(_chunk(kind, {"content": "", "refusal": None, "role": "assistant"}, None, {}))
    if shape == "text":
        events += [_chunk(kind, {"content": f" word{n}"}, None, TEXT_FILTER) for n in range(count)]
        finish = "stop"
    else:
        call = {"function": {"arguments": "", "name": "get_weather"}, "id": "call_1", "index": 0}
        events.append(_chunk(kind, {"tool_calls": [{**call, "type": "function"}]}, None, {}))
        fragments = ['{"city":"', *(["abcdefghij"] * (count - 2)), '"}']
        events += [
            _chunk(kind, {"tool_calls": [{"function": {"arguments": part}, "index": 0}]}, None, {})
            for part in fragments
        ]
        finish = "tool_calls"
    events.append(_chunk(kind, {}, finish, {}))
    return [*events, b"data: [DONE]\n\n"]


def runner(kind: str, shape: str, count: int) -> Callable[[], Awaitable[None]]:
    request = parse_chat_request(openai_request("bench", stream=True))
    plan = plan_for(request, ToolCallsConfig())
    assert plan is not None
    validators = Validators()
    provider = ProviderConfig(kind=kind, base_url="http://127.0.0.1:1", api_key="k")
    target = Target("bench", "p", provider, "gpt-4o")
    translator = TRANSLATORS[kind]
    upstream = reads(kind, shape, count)
    options = StreamOptions("mock", str, NO_LIMITS)

    async def one() -> None:
        ctx = ResponseContext("chatcmpl-x", 1, "bench", request, target=target)
        stream = AuditedStream(
            translator.stream(ctx), plan=plan, validators=validators, on_audit=lambda audit: None
        )
        relay = _Relay(
            LocalAnswer(200, {}, upstream), stream, translator.framing(), options, "bench"
        )
        first = await relay.first_frames()
        async for _ in relay.frames(first):
            pass

    return one


async def per_chunk(kind: str, shape: str) -> float:
    long, short = runner(kind, shape, LONG), runner(kind, shape, SHORT)
    for _ in range(20):
        await long()
        await short()
    longs, shorts = [], []
    for _ in range(REPEATS):
        longs.append(await best_us(long))
        shorts.append(await best_us(short))
    return (min(longs) - min(shorts)) / (LONG - SHORT)


async def main() -> None:
    figures: dict[tuple[str, str], list[float]] = {}
    for _ in range(2):  # the kinds taking turns
        for shape in ("text", "tool"):
            for kind in ("openai", "azure"):
                figures.setdefault((kind, shape), []).append(await per_chunk(kind, shape))
    for shape in ("text", "tool"):
        openai, azure = min(figures["openai", shape]), min(figures["azure", shape])
        print(  # noqa: T201
            f"{shape}: openai {openai:.2f} us per chunk, azure {azure:.2f} us "
            f"({azure / openai:.2f}x)"
        )


if __name__ == "__main__":
    asyncio.run(main())
