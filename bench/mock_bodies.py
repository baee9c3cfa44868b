"""The mock upstream's answers as bytes: OpenAI (PROTOCOLS.md A.3/A.5), Anthropic (B.4/B.5) and
Bedrock's Converse (H.1), non-stream bodies and streams as lists of events (SSE, or Bedrock's
binary event-stream frames), built once at start-up."""

from __future__ import annotations

import base64
import random
import struct
from typing import Any

import orjson

from bench.payload import (
    EMBEDDING_VECTORS,
    PREAMBLE,
    PREAMBLE_PARTS,
    TOOL_CALLS,
    UPSTREAM_MODEL,
    USAGE_IN,
    USAGE_OUT,
    fragment_counts,
    split_fragments,
)
from tests.helpers.bedrock_eventstream import event_frame, padded

CREATED = 1_750_000_000
OPENAI_ID = "chatcmpl-bench000000000000000000001"
ANTHROPIC_ID = "msg_01Bench000000000000000001"


def _json(value: Any) -> bytes:
    return orjson.dumps(value)


# --- OpenAI ------------------------------------------------------------------------------------


def openai_body() -> bytes:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in TOOL_CALLS["openai"]
    ]
    return _json(
        {
            "id": OPENAI_ID,
            "object": "chat.completion",
            "created": CREATED,
            "model": UPSTREAM_MODEL["openai"],
            "system_fingerprint": "fp_bench",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": PREAMBLE,
                        "refusal": None,
                        "tool_calls": calls,
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": _openai_usage(),
        }
    )


def _openai_usage() -> dict[str, int]:
    return {
        "prompt_tokens": USAGE_IN,
        "completion_tokens": USAGE_OUT,
        "total_tokens": USAGE_IN + USAGE_OUT,
    }


def _openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    chunk = {
        "id": OPENAI_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": UPSTREAM_MODEL["openai"],
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return b"data: " + _json(chunk) + b"\n\n"


def openai_events(arg_chunks: int, *, include_usage: bool) -> list[bytes]:
    """Role chunk, the preamble in two parts, then per call a header delta (index, id, type,
    name, arguments "") and its argument fragments; the finish chunk; usage if asked; [DONE]."""
    events = [_openai_chunk({"role": "assistant", "content": ""})]
    events += [_openai_chunk({"content": part}) for part in PREAMBLE_PARTS]
    for index, (call, count) in enumerate(
        zip(TOOL_CALLS["openai"], fragment_counts(arg_chunks), strict=True)
    ):
        header = {"index": index, "id": call.id, "type": "function"}
        header["function"] = {"name": call.name, "arguments": ""}
        events.append(_openai_chunk({"tool_calls": [header]}))
        for fragment in split_fragments(call.arguments, count):
            delta = {"index": index, "function": {"arguments": fragment}}
            events.append(_openai_chunk({"tool_calls": [delta]}))
    events.append(_openai_chunk({}, "tool_calls"))
    if include_usage:
        usage_chunk = {
            "id": OPENAI_ID,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": UPSTREAM_MODEL["openai"],
            "choices": [],
            "usage": _openai_usage(),
        }
        events.append(b"data: " + _json(usage_chunk) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


def embeddings_body(*, packed: bool) -> bytes:
    """OpenAI's embeddings answer for the bench: EMBEDDING_VECTORS, as floats or, when the
    request asked for base64 (`packed`), as little-endian float32 (what OpenAI sends the SDK)."""

    def encoded(vector: list[float]) -> Any:
        if not packed:
            return vector
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()

    data = [
        {"object": "embedding", "index": index, "embedding": encoded(vector)}
        for index, vector in enumerate(EMBEDDING_VECTORS)
    ]
    usage = {"prompt_tokens": USAGE_IN, "total_tokens": USAGE_IN}
    return _json(
        {"object": "list", "data": data, "model": "text-embedding-3-small", "usage": usage}
    )


# --- Anthropic ---------------------------------------------------------------------------------


def anthropic_body() -> bytes:
    content: list[dict[str, Any]] = [{"type": "text", "text": PREAMBLE}]
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}
        for c in TOOL_CALLS["anthropic"]
    ]
    return _json(
        {
            "id": ANTHROPIC_ID,
            "type": "message",
            "role": "assistant",
            "model": UPSTREAM_MODEL["anthropic"],
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": _anthropic_usage(),
        }
    )


def _anthropic_usage() -> dict[str, Any]:
    return {
        "input_tokens": USAGE_IN,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": USAGE_OUT,
        "service_tier": "standard",
    }


def _sse(event: dict[str, Any]) -> bytes:
    name: str = event["type"]
    return b"event: " + name.encode() + b"\ndata: " + _json(event) + b"\n\n"


def anthropic_events(arg_chunks: int) -> list[bytes]:
    """message_start, ping, a text block in two deltas, then per call a tool_use block whose
    input streams as input_json_delta fragments (the first one empty, as the API sends it),
    message_delta with stop_reason tool_use and cumulative usage, message_stop."""
    start_usage = _anthropic_usage() | {"output_tokens": 1}
    message: dict[str, Any] = {
        "id": ANTHROPIC_ID,
        "type": "message",
        "role": "assistant",
        "model": UPSTREAM_MODEL["anthropic"],
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events = [
        _sse({"type": "message_start", "message": message}),
        _sse({"type": "content_block_start", "index": 0, "content_block": _text_block()}),
        _sse({"type": "ping"}),
    ]
    events += [_sse(_delta(0, {"type": "text_delta", "text": part})) for part in PREAMBLE_PARTS]
    events.append(_sse({"type": "content_block_stop", "index": 0}))
    for block, (call, count) in enumerate(
        zip(TOOL_CALLS["anthropic"], fragment_counts(arg_chunks), strict=True), start=1
    ):
        tool_use = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        events.append(
            _sse({"type": "content_block_start", "index": block, "content_block": tool_use})
        )
        for fragment in ["", *split_fragments(call.arguments, count)]:
            events.append(
                _sse(_delta(block, {"type": "input_json_delta", "partial_json": fragment}))
            )
        events.append(_sse({"type": "content_block_stop", "index": block}))
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": USAGE_OUT},
    }
    events += [_sse(message_delta), _sse({"type": "message_stop"})]
    return events


def _text_block() -> dict[str, str]:
    return {"type": "text", "text": ""}


def _delta(index: int, delta: dict[str, str]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


# --- Bedrock (Converse) ------------------------------------------------------------------------


def _bedrock_usage() -> dict[str, int]:
    return {"inputTokens": USAGE_IN, "outputTokens": USAGE_OUT, "totalTokens": USAGE_IN + USAGE_OUT}


def bedrock_body() -> bytes:
    """A ConverseResponse: the preamble as a text block, the calls as toolUse blocks whose
    `input` is an object (as for Anthropic), stopReason tool_use."""
    content: list[dict[str, Any]] = [{"text": PREAMBLE}]
    content += [
        {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.input}}
        for c in TOOL_CALLS["bedrock"]
    ]
    return _json(
        {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use",
            "usage": _bedrock_usage(),
            "metrics": {"latencyMs": 512},
        }
    )


def bedrock_event_payloads(arg_chunks: int) -> list[tuple[str, dict[str, Any]]]:
    """The answer as ConverseStream events, chunk for chunk the Anthropic stream's: the
    preamble in the same two deltas (a text block has no start event), each call a
    contentBlockStart, an empty first input fragment, then the same argument fragments;
    messageStop, then usage in `metadata`."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    events += [
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": part}})
        for part in PREAMBLE_PARTS
    ]
    events.append(("contentBlockStop", {"contentBlockIndex": 0}))
    for block, (call, count) in enumerate(
        zip(TOOL_CALLS["bedrock"], fragment_counts(arg_chunks), strict=True), start=1
    ):
        start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
        events.append(("contentBlockStart", {"contentBlockIndex": block, "start": start}))
        events += [
            ("contentBlockDelta", {"contentBlockIndex": block, "delta": {"toolUse": {"input": f}}})
            for f in ["", *split_fragments(call.arguments, count)]
        ]
        events.append(("contentBlockStop", {"contentBlockIndex": block}))
    metadata = {"usage": _bedrock_usage(), "metrics": {"latencyMs": 512}}
    return [*events, ("messageStop", {"stopReason": "tool_use"}), ("metadata", metadata)]


def bedrock_events(arg_chunks: int) -> list[bytes]:
    """The ConverseStream events as application/vnd.amazon.eventstream frames, each payload
    padded with `p` as AWS pads it (a fixed seed: the same bytes every run)."""
    rng = random.Random(f"bench-{arg_chunks}")
    return [
        event_frame(name, padded(payload, rng))
        for name, payload in bedrock_event_payloads(arg_chunks)
    ]
