"""An estimate of a Messages request's input tokens, for count_tokens on upstreams with no
counting endpoint: about four characters of text per token, a flat cost per image or
document (Anthropic's own rule of thumb for a mid-sized image), a few tokens per message."""

from __future__ import annotations

import math
from typing import Any

CHARS_PER_TOKEN = 4
MEDIA_TOKENS = 1600
MESSAGE_TOKENS = 4


def estimate_tokens(anthropic_body: dict[str, Any]) -> int:
    messages = anthropic_body.get("messages") or []
    characters = _characters(anthropic_body.get("system")) + _characters(messages)
    characters += _characters(anthropic_body.get("tools"))
    media = _media(messages)
    return (
        math.ceil(characters / CHARS_PER_TOKEN)
        + media * MEDIA_TOKENS
        + MESSAGE_TOKENS * len(messages)
    )


def _characters(value: Any) -> int:
    """Every string in the value (keys of tool schemas too), but not base64 media data."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_characters(item) for item in value)
    if isinstance(value, dict):
        if value.get("type") in ("base64", "url"):
            return 0
        return sum(len(key) + _characters(item) for key, item in value.items())
    return 0


def _media(value: Any) -> int:
    if isinstance(value, list):
        return sum(_media(item) for item in value)
    if isinstance(value, dict):
        own = 1 if value.get("type") in ("image", "document") else 0
        return own + sum(_media(item) for item in value.values())
    return 0
