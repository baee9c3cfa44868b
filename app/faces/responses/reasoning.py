"""Anthropic's thinking blocks carried in a reasoning item's `encrypted_content`.

A client that stores nothing (Codex sends `store: false`) keeps its history itself and sends
each reasoning item back as it got it; the blocks must then reach Anthropic byte-exact, first
in their turn. The content is opaque to the client: the blocks as JSON, base64-encoded, behind
a version prefix, so a string that is not ours (an OpenAI-encrypted one, say) is told apart
and ignored rather than sent on."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

PREFIX = "trb1:"


def encrypted_content(blocks: list[dict[str, Any]]) -> str:
    return PREFIX + base64.b64encode(orjson.dumps(blocks)).decode()


def thinking_blocks(content: Any) -> list[dict[str, Any]] | None:
    """The blocks inside one of our `encrypted_content` strings; None for anything else."""
    if not isinstance(content, str) or not content.startswith(PREFIX):
        return None
    try:
        blocks = orjson.loads(base64.b64decode(content[len(PREFIX) :], validate=True))
    except (binascii.Error, orjson.JSONDecodeError, ValueError):
        return None
    if not isinstance(blocks, list) or not all(isinstance(block, dict) for block in blocks):
        return None
    return blocks
