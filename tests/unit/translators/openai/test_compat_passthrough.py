"""Streams and answers that already keep OpenAI's contract go out as they came: the same chunks,
none merged, split, dropped or reordered, each one's JSON unchanged but for `model` (compared
as encoded bytes, so not even the key order moves)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.base import ResponseContext
from app.translators.openai.response import parse_response
from app.translators.openai.stream import OpenAIStream
from tests.helpers.openai_stream import assert_openai_stream
from tests.helpers.upstream_answers import (
    openai_text_chunks,
    openai_tool_chunks,
    openai_tool_completion,
)

ENVELOPE = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion.chunk",
    "created": 1741569952,
    "model": "gpt-4o-2024-08-06",
    "service_tier": "default",
    "system_fingerprint": "fp_eb9dce56a8",
}


def sdk_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A chunk as OpenAI sends it with include_usage: `usage: null` until the usage chunk,
    and the `obfuscation` padding newer streams carry."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {**ENVELOPE, "choices": [choice], "usage": None, "obfuscation": "xQ3"}


def single_call_with_usage() -> list[dict[str, Any]]:
    header = {"index": 0, "id": "call_JMW1whyEaYG438VE1OIflxA2", "type": "function"}
    header["function"] = {"name": "GetWeatherArgs", "arguments": ""}
    fragments = ['{"ci', 'ty": ', '"Edinburgh"', ', "country": "UK", ', '"units": "c"}']
    chunks = [
        sdk_chunk({"role": "assistant", "content": None, "refusal": None}),
        sdk_chunk({"tool_calls": [header]}),
        *[
            sdk_chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]})
            for fragment in fragments
        ],
        sdk_chunk({}, "tool_calls"),
    ]
    usage = {
        "prompt_tokens": 79,
        "completion_tokens": 23,
        "total_tokens": 102,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    return [*chunks, {**ENVELOPE, "choices": [], "usage": usage, "obfuscation": "m2"}]


def text_with_usage() -> list[dict[str, Any]]:
    chunks = [sdk_chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [sdk_chunk({"content": word}) for word in ("Hello", " world", "!")]
    usage = {"prompt_tokens": 14, "completion_tokens": 3, "total_tokens": 17}
    return [*chunks, sdk_chunk({}, "stop"), {**ENVELOPE, "choices": [], "usage": usage}]


STREAMS = {
    "text": (openai_text_chunks("Hel", "lo", " there"), False),
    "text-with-usage": (text_with_usage(), True),
    "single-call-with-usage": (single_call_with_usage(), True),
    "parallel-calls": (openai_tool_chunks(), False),
    "parallel-calls-with-usage": (openai_tool_chunks(include_usage=True), True),
}


def context(include_usage: bool) -> ResponseContext:
    body = {
        "model": "fast",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": include_usage},
    }
    return ResponseContext("chatcmpl-proxy", 1, "fast", parse_chat_request(orjson.dumps(body)))


@pytest.mark.parametrize(("chunks", "include_usage"), STREAMS.values(), ids=STREAMS.keys())
def test_a_strict_stream_is_relayed_as_it_came(
    chunks: list[dict[str, Any]], include_usage: bool
) -> None:
    stream = OpenAIStream(context(include_usage))
    relayed = []
    for chunk in chunks:
        relayed += stream.feed(SSEEvent(orjson.dumps(chunk).decode()))
    relayed += stream.feed(SSEEvent("[DONE]"))
    relayed += stream.finish()

    assert [orjson.dumps(chunk) for chunk in relayed] == [
        orjson.dumps({**chunk, "model": "fast"}) for chunk in chunks
    ]
    assert_openai_stream(relayed, include_usage=include_usage)


def test_a_strict_answer_is_relayed_as_it_came() -> None:
    upstream = openai_tool_completion()
    answer = parse_response(orjson.dumps(upstream), context(False))
    assert orjson.dumps(answer) == orjson.dumps({**upstream, "model": "fast"})
