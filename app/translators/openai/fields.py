"""Field repairs that OpenAI-compatible streams and non-stream answers share (PROTOCOLS.md §D):
arguments as JSON text, the reasoning field's name, finish_reason, usage totals, call ids."""

from __future__ import annotations

from typing import Any

import orjson

FINISH_REASON_ALIASES = {"model_length": "length"}
"""Mistral's extra reason (§D #20); every other value is relayed as the upstream sent it."""


def arguments_text(arguments: Any) -> str:
    """`function.arguments` as the JSON text OpenAI sends. llama.cpp (2026-03 regression) and
    Ollama's native API send an object (§D #12); vLLM's hermes parser sends null or nothing
    (#10), which clients that `+=` the fragments cannot take."""
    if type(arguments) is str:
        return arguments
    if arguments is None:
        return ""
    return orjson.dumps(arguments).decode()


def is_complete_json(text: str) -> bool:
    """Whether a call's arguments so far already form a whole JSON value: the sign, on servers
    that reuse an index or change ids (§D #3, #8), that the next named delta is a new call."""
    if not text:
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def rename_reasoning(fields: dict[str, Any]) -> None:
    """vLLM (since late 2025), OpenRouter, Groq and LocalAI call the model's thinking
    `reasoning`; DeepSeek, SGLang and the clients that show it read `reasoning_content` (§D #18).
    When a server sends both (vLLM's transition releases), `reasoning_content` is kept."""
    reasoning = fields.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        return  # some other structure under that name: not ours to reinterpret
    del fields["reasoning"]
    if reasoning is not None and fields.get("reasoning_content") is None:
        fields["reasoning_content"] = reasoning


def final_finish_reason(reason: Any, called: bool) -> Any:
    """Agents branch on `tool_calls`: Ollama, older vLLM and OCI say `stop` after calls (§D #14),
    and vLLM without a tool parser says `tool_calls` with none (#15)."""
    if isinstance(reason, str):
        reason = FINISH_REASON_ALIASES.get(reason, reason)
    if called:
        return "tool_calls" if reason == "stop" else reason
    return "stop" if reason == "tool_calls" else reason


USAGE_DETAILS = ("prompt_tokens_details", "completion_tokens_details")


def complete_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Usage with `total_tokens`, which some servers leave out while clients sum by it, and
    without details sent as null (vLLM): OpenAI's spec has them objects or absent."""
    if any(key in usage and usage[key] is None for key in USAGE_DETAILS):
        usage = {key: value for key, value in usage.items() if value is not None}
    if "total_tokens" in usage:
        return usage
    prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if type(prompt_tokens) is not int or type(completion_tokens) is not int:
        return usage
    return {**usage, "total_tokens": prompt_tokens + completion_tokens}


def call_id_prefix(completion_id: str, choice_index: Any = 0) -> str:
    """Ids for calls a server sent without one (Gemini's and Ollama's compat endpoints, OCI's
    Gemini models): derived from the proxy's completion id, so they are unique per answer and
    a client can send them back as `tool_call_id`."""
    suffix = completion_id.removeprefix("chatcmpl-")
    return f"call_{suffix}_" if not choice_index else f"call_{suffix}_{choice_index}_"


def str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
