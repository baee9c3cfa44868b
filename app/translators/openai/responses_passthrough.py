"""The Responses API relayed to an upstream that serves `/v1/responses` itself (a provider
with `responses: native`, e.g. OpenAI): the request as the client sent it, only `model`
replaced; the answer and every event come back as they came (CONTRACT.md, "OpenAI Responses
API"). Errors are read as this kind's; usage is read from the final event for the proxy's own
counts."""

from __future__ import annotations

from typing import Any

from app.errors import UpstreamProtocolError, UpstreamStreamError
from app.openai_types import ChatRequest
from app.sse import SSEEvent
from app.translators.base import (
    Chunk,
    NativeRequest,
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
    load_json_object,
    relayed_answer,
    relayed_request,
)
from app.translators.openai.response import parse_error

TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def responses_passthrough(native: NativeRequest) -> Translator:
    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        headers = {"content-type": "application/json"}
        if target.provider.api_key:
            headers["authorization"] = f"Bearer {target.provider.api_key}"
        return relayed_request(native, target, headers)

    return Translator(
        build_request=build_request,
        parse_response=relayed_answer,
        parse_error=parse_error,
        stream=NativeResponsesStream,
    )


def chat_usage(usage: Any) -> dict[str, Any] | None:
    """A Response's usage in chat terms, for limits, metrics and the log line."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": usage.get("total_tokens") or prompt + completion,
    }


class NativeResponsesStream:
    """Each upstream event as it came (as a dict, for the face's framing). A bare `error`
    event ends the stream as the relay's in-band error; a stream with no terminal event was
    cut short."""

    __slots__ = ("_ended", "_usage")

    def __init__(self, ctx: ResponseContext) -> None:
        self._ended = False
        self._usage: dict[str, Any] | None = None

    def feed(self, event: SSEEvent) -> list[Chunk]:
        if event.data == "[DONE]":
            return []
        upstream_event = load_json_object(event.data, "an event")
        kind = upstream_event.get("type")
        if kind == "error":
            message = upstream_event.get("message") or "The upstream reported an error."
            raise UpstreamStreamError(str(message), code=upstream_event.get("code"))
        if kind in TERMINAL_EVENTS:
            self._ended = True
            response = upstream_event.get("response")
            if isinstance(response, dict):
                self._usage = chat_usage(response.get("usage"))
        return [upstream_event]

    def usage(self) -> dict[str, Any] | None:
        return self._usage

    def finish(self) -> list[Chunk]:
        if not self._ended:
            raise UpstreamProtocolError("the upstream's Responses stream ended before it completed")
        return []
