"""The request for OpenAI Chat Completions and every OpenAI-compatible server: the client's JSON
forwarded as sent, only `model` replaced, tool-call ids too long for OpenAI shortened, and
streams asked for their usage."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from app.openai_types import ChatRequest
from app.translators.base import (
    Target,
    UpstreamRequest,
)
from app.translators.prompt_cache import without_billing_message

# OpenAI refuses longer tool-call ids in the history ("Invalid 'messages[2].tool_calls[0].id':
# string too long. Expected a string with maximum length 40"). Other providers' ids are longer:
# ours for Gemini carry its thought signature, so a conversation moving from a Gemini model to
# an OpenAI one (a fallback, or the client switching) would fail on its first request.
MAX_TOOL_CALL_ID = 40


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The client's JSON with only `model` replaced, so unknown fields reach the upstream,
    tool-call ids too long for OpenAI shortened, and Claude Code's billing line left out (it
    would change the prompt's first bytes every turn: no prefix cache hit)."""
    upstream_body = dict(request.wire)
    upstream_body["model"] = target.upstream_model
    messages = without_billing_message(upstream_body.get("messages"))
    if messages is not None:
        upstream_body["messages"] = messages
    messages = _with_short_tool_call_ids(upstream_body.get("messages"))
    if messages is not None:
        upstream_body["messages"] = messages
    if request.stream and not request.include_usage:
        # Token limits and metrics count every stream's usage; the stream translator still
        # sends the client a usage chunk only when it asked for one.
        options = upstream_body.get("stream_options")
        upstream_body["stream_options"] = {
            **(options if isinstance(options, dict) else {}),
            "include_usage": True,
        }
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
