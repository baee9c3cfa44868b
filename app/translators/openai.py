"""OpenAI Chat Completions (`POST {base_url}/chat/completions`) and every OpenAI-compatible
server: the request is forwarded as the client sent it, answers are relayed chunk for chunk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from app.errors import (
    ProxyError,
    UpstreamProtocolError,
    UpstreamStatusError,
    UpstreamStreamError,
)
from app.openai_types import ChatRequest
from app.sse import SSEEvent
from app.translators.base import (
    Chunk,
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
    load_json_object,
)

PASSED_ERROR_HEADERS = ("retry-after", "retry-after-ms")


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The client's JSON with only `model` replaced, so unknown fields reach the upstream."""
    upstream_body = dict(request.wire)
    upstream_body["model"] = target.upstream_model
    provider = target.provider
    headers = {"content-type": "application/json", **provider.headers}
    if provider.api_key:
        headers["authorization"] = f"Bearer {provider.api_key}"
    return UpstreamRequest(
        url=f"{provider.base_url}/chat/completions",
        headers=headers,
        body=orjson.dumps(upstream_body),
        stream=bool(request.stream),
    )


def parse_response(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    openai_completion = load_json_object(upstream_body, "an answer")
    if not isinstance(openai_completion.get("choices"), list):
        raise UpstreamProtocolError("The upstream answer has no choices.")
    openai_completion["model"] = ctx.model
    return openai_completion


def parse_error(status: int, upstream_body: bytes, headers: Mapping[str, str]) -> ProxyError:
    message, error_type, code, param = f"Upstream returned HTTP {status}.", None, None, None
    try:
        upstream_error = orjson.loads(upstream_body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        upstream_error = None
    if isinstance(upstream_error, dict):
        message = str(upstream_error.get("message") or message)
        error_type = _str_or_none(upstream_error.get("type"))
        code = _str_or_none(upstream_error.get("code"))
        param = _str_or_none(upstream_error.get("param"))
    elif isinstance(upstream_error, str):
        message = upstream_error
    kept = {name: headers[name] for name in PASSED_ERROR_HEADERS if name in headers}
    return UpstreamStatusError(
        status, message, type=error_type, code=code, param=param, headers=kept
    )


class OpenAIStream:
    """Relays each upstream chunk as it came; only `model` is rewritten."""

    __slots__ = ("_done", "_finished", "_model")

    def __init__(self, ctx: ResponseContext) -> None:
        self._model = ctx.model
        self._done = False
        self._finished = False

    def feed(self, event: SSEEvent) -> list[Chunk]:
        if event.data == "[DONE]":
            self._done = True
            return []
        openai_chunk = load_json_object(event.data, "a stream chunk")
        if openai_chunk.get("error"):
            raise _stream_error(openai_chunk["error"])
        openai_chunk["model"] = self._model
        choices = openai_chunk.get("choices") or ()
        if not all(isinstance(choice, dict) for choice in choices):
            raise UpstreamProtocolError("The upstream sent a chunk whose choices are not objects.")
        if not self._finished:
            self._finished = any(choice.get("finish_reason") for choice in choices)
        return [openai_chunk]

    def finish(self) -> list[Chunk]:
        # Some compatible servers omit [DONE]; a stream that reached its finish_reason is
        # complete all the same. One that did neither was cut short.
        if not (self._done or self._finished):
            raise UpstreamProtocolError("The upstream stream ended before the answer was complete.")
        return []


def _stream_error(upstream_error: Any) -> UpstreamStreamError:
    if isinstance(upstream_error, dict):
        return UpstreamStreamError(
            str(upstream_error.get("message") or "The upstream reported an error."),
            type=str(upstream_error.get("type") or "api_error"),
            code=_str_or_none(upstream_error.get("code")),
        )
    return UpstreamStreamError(str(upstream_error))


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_response,
    parse_error=parse_error,
    stream=OpenAIStream,
)
