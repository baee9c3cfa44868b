"""Four upstreams behind one httpx transport, each keeping its prompt cache as its provider
documents it (prompt_cache_double.py) and answering with the usage that cache gives: Anthropic
(`anthropic.upstream.test`), Bedrock (`bedrock.test`), OpenAI (`openai.upstream.test`) and
Gemini (`gemini.test`). Every answer is a short text, whole or streamed, with an id of its own;
the bodies each received are kept, in order, for byte comparisons."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import orjson

from tests.helpers.mock_bedrock import converse_answer, converse_stream_frames
from tests.helpers.prompt_cache_double import (
    AutomaticCache,
    ExplicitCache,
    TooManyBreakpoints,
    Usage,
    anthropic_usage,
    bedrock_usage,
    gemini_prompt,
    gemini_usage,
    openai_prompt,
    openai_usage,
)

HOSTS = {
    "anthropic.upstream.test": "anthropic",
    "bedrock.test": "bedrock",
    "openai.upstream.test": "openai",
    "gemini.test": "gemini",
}
EVENTSTREAM = "application/vnd.amazon.eventstream"


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = b""
    for event, data in events:
        head = f"event: {event}\n".encode() if event else b""
        payload = data if isinstance(data, bytes) else orjson.dumps(data)
        out += head + b"data: " + payload + b"\n\n"
    return out


class CachingUpstreams:
    """`httpx.MockTransport(CachingUpstreams())`; `caches[kind].counters` has what each read."""

    def __init__(self) -> None:
        self.caches: dict[str, Any] = {
            "anthropic": ExplicitCache("anthropic"),
            "bedrock": ExplicitCache("bedrock"),
            "openai": AutomaticCache(),
            "gemini": AutomaticCache(),
        }
        self.bodies: dict[str, list[bytes]] = {kind: [] for kind in self.caches}
        self._ids = itertools.count(1)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        kind = HOSTS[request.url.host]
        raw = request.read()
        self.bodies[kind].append(raw)
        body = orjson.loads(raw)
        n = next(self._ids)
        text = f"Done with step {n}."
        try:
            if kind == "anthropic":
                return self._anthropic(body, n, text)
            if kind == "bedrock":
                return self._bedrock(body, request.url.path.endswith("-stream"), text)
        except TooManyBreakpoints as error:
            return _too_many(kind, str(error))
        if kind == "openai":
            return self._openai(body, n, text)
        return self._gemini(body, "streamGenerateContent" in request.url.path, text)

    def _anthropic(self, body: dict[str, Any], n: int, text: str) -> httpx.Response:
        usage = anthropic_usage(self.caches["anthropic"].serve(body))
        message = {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return httpx.Response(200, json=message)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        delta = {"type": "text_delta", "text": text}
        empty = {"type": "text", "text": ""}
        stop = {"stop_reason": "end_turn", "stop_sequence": None}
        events = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": empty},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 10}},
            {"type": "message_stop"},
        ]
        return _stream(_sse([(event["type"], event) for event in events]))

    def _bedrock(self, body: dict[str, Any], stream: bool, text: str) -> httpx.Response:
        usage = bedrock_usage(self.caches["bedrock"].serve(body))
        if not stream:
            return httpx.Response(200, json=converse_answer(text, usage=usage).json)
        frames = converse_stream_frames(text, usage=usage)
        return httpx.Response(
            200,
            content=b"".join(frame.encode() for frame in frames),
            headers={"content-type": EVENTSTREAM},
        )

    def _openai(self, body: dict[str, Any], n: int, text: str) -> httpx.Response:
        usage = openai_usage(self.caches["openai"].serve(openai_prompt(body)))
        head = {"id": f"chatcmpl-{n:04d}", "created": 1727346178, "model": body["model"]}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return httpx.Response(
                200,
                json={**head, "object": "chat.completion", "choices": [choice], "usage": usage},
            )
        chunk = {**head, "object": "chat.completion.chunk"}
        delta = {"role": "assistant", "content": text}
        chunks = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**chunk, "choices": [], "usage": usage})
        return _stream(_sse([(None, c) for c in chunks] + [(None, b"[DONE]")]))

    def _gemini(self, body: dict[str, Any], stream: bool, text: str) -> httpx.Response:
        usage = gemini_usage(self.caches["gemini"].serve(gemini_prompt(body)))
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
        }
        if not stream:
            return httpx.Response(200, json=answer)
        return _stream(_sse([(None, answer)]))

    def usage(self, kind: str) -> list[Usage]:
        usages: list[Usage] = self.caches[kind].counters.usages
        return usages


def _stream(content: bytes) -> httpx.Response:
    return httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})


def _too_many(kind: str, message: str) -> httpx.Response:
    if kind == "anthropic":
        error = {"type": "invalid_request_error", "message": message}
        return httpx.Response(400, json={"type": "error", "error": error})
    headers = {"x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/"}
    return httpx.Response(400, json={"message": message}, headers=headers)
