"""The Messages API relayed to an anthropic upstream as the client sent it (CONTRACT.md,
"Anthropic Messages API"): unknown fields and `anthropic-beta` kept, only `model` replaced with
the deployment's; answers and events come back untouched, errors as this kind's."""

from __future__ import annotations

from typing import Any

from app.errors import UpstreamProtocolError
from app.openai_types import ChatRequest
from app.sse import SSEEvent
from app.translators.anthropic.request import ANTHROPIC_VERSION
from app.translators.anthropic.response import openai_usage, parse_error
from app.translators.anthropic.stream import merge_usage, raise_stream_error
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

FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")


def passthrough(native: NativeRequest) -> Translator:
    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        headers |= {
            name: native.headers[name] for name in FORWARDED_HEADERS if name in native.headers
        }
        if target.provider.api_key:
            headers["x-api-key"] = target.provider.api_key
        return relayed_request(native, target, headers)

    return Translator(
        build_request=build_request,
        parse_response=relayed_answer,
        parse_error=parse_error,
        stream=NativeStream,
    )


class NativeStream:
    """Each upstream event as it came (as a dict, for the face's framing); an `error` event
    ends the stream as the relay's in-band error; a stream without `message_stop` was cut
    short. Usage is read from message_start and message_delta for the proxy's own counts."""

    __slots__ = ("_stopped", "_usage")

    def __init__(self, ctx: ResponseContext) -> None:
        self._stopped = False
        self._usage: dict[str, Any] = {}

    def feed(self, event: SSEEvent) -> list[Chunk]:
        anthropic_event = load_json_object(event.data, "an event")
        kind = anthropic_event.get("type")
        if kind == "error":
            raise_stream_error(anthropic_event)
        if kind == "message_stop":
            self._stopped = True
        elif kind == "message_delta":
            merge_usage(self._usage, anthropic_event.get("usage"))
        elif kind == "message_start" and isinstance(anthropic_event.get("message"), dict):
            merge_usage(self._usage, anthropic_event["message"].get("usage"))
        return [anthropic_event]

    def usage(self) -> dict[str, Any] | None:
        return dict(openai_usage(self._usage)) if self._usage else None

    def finish(self) -> list[Chunk]:
        if not self._stopped:
            raise UpstreamProtocolError("the anthropic upstream's stream ended before message_stop")
        return []
