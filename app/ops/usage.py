"""Token counts from an answer's usage, in any client API's shape."""

from __future__ import annotations

from typing import Any

ANTHROPIC_PROMPT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def token_counts(usage: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens from OpenAI's usage or (a native Messages API answer)
    Anthropic's, whose cache reads and writes are prompt tokens too; None without usage."""
    if not isinstance(usage, dict):
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if "input_tokens" in usage or "output_tokens" in usage:
        prompt = sum(_count(usage, name) for name in ANTHROPIC_PROMPT)
        return prompt, _count(usage, "output_tokens")
    return None


def cache_counts(usage: Any) -> tuple[int, int]:
    """(read, written) prompt-cache tokens of an answer's usage, in whichever client API's
    shape it is: chat's `prompt_tokens_details`, Responses' `input_tokens_details` (each
    `cached_tokens` and `cache_write_tokens`), or Anthropic's `cache_read_input_tokens` and
    `cache_creation_input_tokens`. (0, 0) when none are reported."""
    if not isinstance(usage, dict):
        return 0, 0
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    if isinstance(details, dict):
        return _count(details, "cached_tokens"), _count(details, "cache_write_tokens")
    return _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) else 0
