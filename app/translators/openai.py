"""OpenAI Chat Completions (`POST {base_url}/chat/completions`) and every OpenAI-compatible
server: the request is forwarded as the client sent it, answers are relayed as they came, with
the known deviations of compatible servers (PROTOCOLS.md §D) repaired."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from app.errors import ProxyError, UpstreamProtocolError, UpstreamStatusError
from app.openai_types import ChatRequest
from app.translators.base import (
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
    load_json_object,
)
from app.translators.openai_fields import (
    arguments_text,
    call_id_prefix,
    complete_usage,
    final_finish_reason,
    rename_reasoning,
    str_or_none,
)
from app.translators.openai_stream import OpenAIStream

__all__ = ["TRANSLATOR", "OpenAIStream", "build_request", "parse_error", "parse_response"]

PASSED_ERROR_HEADERS = ("retry-after", "retry-after-ms")


# OpenAI refuses longer tool-call ids in the history ("Invalid 'messages[2].tool_calls[0].id':
# string too long. Expected a string with maximum length 40"). Other providers' ids are longer:
# ours for Gemini carry its thought signature, so a conversation moving from a Gemini model to
# an OpenAI one (a fallback, or the client switching) would fail on its first request.
MAX_TOOL_CALL_ID = 40


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The client's JSON with only `model` replaced, so unknown fields reach the upstream, and
    tool-call ids too long for OpenAI shortened."""
    upstream_body = dict(request.wire)
    upstream_body["model"] = target.upstream_model
    messages = _with_short_tool_call_ids(upstream_body.get("messages"))
    if messages is not None:
        upstream_body["messages"] = messages
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


def _with_short_tool_call_ids(messages: Any) -> list[Any] | None:
    """The messages with every tool-call id over MAX_TOOL_CALL_ID characters replaced by a
    digest of it (the same on the call and on its result, so they still pair up), or None when
    no id is too long: the common case costs one pass and no copy. Only the history sent
    upstream changes; the client never sees these ids."""
    if not isinstance(messages, list) or not any(map(_has_long_id, messages)):
        return None
    shortened: list[Any] = []
    for message in messages:
        if not _has_long_id(message):
            shortened.append(message)
            continue
        copy = dict(message)
        if isinstance(copy.get("tool_call_id"), str):
            copy["tool_call_id"] = _short_id(copy["tool_call_id"])
        if isinstance(copy.get("tool_calls"), list):
            copy["tool_calls"] = [
                {**call, "id": _short_id(call["id"])} if _is_long_id(call) else call
                for call in copy["tool_calls"]
            ]
        shortened.append(copy)
    return shortened


def _has_long_id(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    result_id = message.get("tool_call_id")
    if isinstance(result_id, str) and len(result_id) > MAX_TOOL_CALL_ID:
        return True
    calls = message.get("tool_calls")
    return isinstance(calls, list) and any(map(_is_long_id, calls))


def _is_long_id(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and isinstance(call.get("id"), str)
        and len(call["id"]) > MAX_TOOL_CALL_ID
    )


def _short_id(long_id: str) -> str:
    if len(long_id) <= MAX_TOOL_CALL_ID:
        return long_id
    return "call_" + hashlib.sha256(long_id.encode()).hexdigest()[: MAX_TOOL_CALL_ID - 5]


def parse_response(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """The answer as sent, with `model` rewritten and the deviations of PROTOCOLS.md §D that a
    non-stream answer can have repaired in place."""
    openai_completion = load_json_object(upstream_body, "an answer")
    choices = openai_completion.get("choices")
    if not isinstance(choices, list):
        raise UpstreamProtocolError("The upstream answer has no choices.")
    openai_completion["model"] = ctx.model
    openai_completion["object"] = "chat.completion"
    _repair_usage(openai_completion)
    for choice in choices:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            id_prefix = call_id_prefix(ctx.completion_id, choice.get("index"))
            _repair_choice(choice, choice["message"], id_prefix)
    return openai_completion


def _repair_choice(choice: dict[str, Any], message: dict[str, Any], id_prefix: str) -> None:
    if "reasoning" in message:
        rename_reasoning(message)
    called = _repair_tool_calls(message, id_prefix)
    if called and not message.get("content"):
        message["content"] = None  # Ollama sends "", Gemini's endpoint nothing; OpenAI null
    upstream_reason = choice.get("finish_reason")
    if upstream_reason is not None:
        choice["finish_reason"] = final_finish_reason(upstream_reason, called)


def _repair_tool_calls(message: dict[str, Any], id_prefix: str) -> bool:
    """Each call as `{id, type: "function", function: {name, arguments: JSON text}}`, once.
    Returns whether the message calls any tool."""
    tool_calls = message.get("tool_calls")
    if tool_calls is None:
        return False
    repaired: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    for call in tool_calls if isinstance(tool_calls, list) else ():
        if not isinstance(call, dict):
            continue
        call_id = call.get("id")
        if not call_id or not isinstance(call_id, str):
            call["id"] = call_id = f"{id_prefix}{len(repaired)}"
        elif call_id in seen_ids:
            continue  # LocalAI sends one call twice (§D #5)
        seen_ids.add(call_id)
        function = call.get("function")
        if isinstance(function, dict):
            if not call.get("type"):
                call["type"] = "function"  # optional in the spec; openai-python needs it (§D #11)
            # Strict tools json.loads the arguments: a parameterless call's are "{}", never "".
            function["arguments"] = arguments_text(function.get("arguments")) or "{}"
        repaired.append(call)
    if not repaired:
        del message["tool_calls"]  # `tool_calls: []` (Groq, Ollama) means no call
    elif len(repaired) != len(tool_calls):
        message["tool_calls"] = repaired
    return bool(repaired)


def _repair_usage(openai_completion: dict[str, Any]) -> None:
    usage = openai_completion.get("usage")
    if usage is None:
        x_groq = openai_completion.get("x_groq")
        usage = x_groq.get("usage") if isinstance(x_groq, dict) else None
    if isinstance(usage, dict) and usage:
        openai_completion["usage"] = complete_usage(usage)


def parse_error(status: int, upstream_body: bytes, headers: Mapping[str, str]) -> ProxyError:
    message, error_type, code, param = f"Upstream returned HTTP {status}.", None, None, None
    try:
        upstream_error = orjson.loads(upstream_body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        upstream_error = None
    if isinstance(upstream_error, dict):
        message = str(upstream_error.get("message") or message)
        error_type = str_or_none(upstream_error.get("type"))
        code = str_or_none(upstream_error.get("code"))
        param = str_or_none(upstream_error.get("param"))
    elif isinstance(upstream_error, str):
        message = upstream_error
    kept = {name: headers[name] for name in PASSED_ERROR_HEADERS if name in headers}
    return UpstreamStatusError(
        status, message, type=error_type, code=code, param=param, headers=kept
    )


TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_response,
    parse_error=parse_error,
    stream=OpenAIStream,
)
