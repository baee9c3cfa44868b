"""OpenAI-compatible answers and errors, read back: a non-stream completion relayed with the
deviations of compatible servers repaired (PROTOCOLS.md §D), and an error answer as a ProxyError."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from app.errors import ProxyError, UpstreamProtocolError, UpstreamStatusError
from app.translators.base import (
    ResponseContext,
    load_json_object,
)
from app.translators.openai.fields import (
    arguments_text,
    call_id_prefix,
    complete_usage,
    final_finish_reason,
    rename_reasoning,
    str_or_none,
)

PASSED_ERROR_HEADERS = ("retry-after", "retry-after-ms")


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
    # Required (nullable) by OpenAI's spec; compatible servers (Ollama, vLLM...) leave them out.
    choice.setdefault("logprobs", None)
    message.setdefault("refusal", None)
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
