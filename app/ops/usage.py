"""Token counts from an answer's usage, in either client API's shape."""

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


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) else 0
