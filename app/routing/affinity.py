"""Conversation affinity (CONTRACT.md, "Prompt caching"): the turns of one conversation go to
the same deployment of a model, so its prompt cache is warm, from any replica and with no
shared store. A weighted rendezvous hash does it: each deployment scores
`-weight / ln(u)`, `u` a uniform draw seeded by the conversation and the deployment, and the
highest healthy score wins. Every replica computes the same scores; when the winner fails or
rests the next one takes the turn, and the winner gets it back once healthy; across many
conversations each deployment wins in proportion to its weight.

A conversation is named by what the client says names it (`prompt_cache_key`, which the
Messages face fills from `metadata.user_id`; else `user` / `safety_identifier`), else by a
digest of what stays the same on every turn: the tool names, the leading system text and the
first user message. Only bounded slices of the texts are hashed (the speed budget is 10 us a
request): two conversations whose slices agree share a deployment, which costs nothing, as
their prefixes then agree too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from hashlib import blake2b
from typing import Any

from app.openai_types import ChatRequest

BILLING_LINE = "x-anthropic-billing-header:"
"""Claude Code's first system line; its hash changes on every request, so it is never part of
a conversation's key."""

SYSTEM_SLICE = 512
"""Characters hashed from each end of the system text (with its length)."""
FIRST_MESSAGE_SLICE = 2048
"""Characters hashed from the start of the first user message (with its length)."""

_MASK = (1 << 64) - 1


def conversation_key(request: ChatRequest) -> int | None:
    """A 64-bit name for the request's conversation; None when nothing names one (an
    embeddings request's or a refused translation's placeholder)."""
    wire = request.wire
    for field in ("prompt_cache_key", "user", "safety_identifier"):
        named = wire.get(field)
        if isinstance(named, str) and named:
            return _digest(f"{field}\x00{named}")
    return _content_key(wire)


def _content_key(wire: dict[str, Any]) -> int | None:
    messages = wire.get("messages")
    if not isinstance(messages, list):
        return None
    system: list[str] = []
    first = ""
    for message in messages:
        if not isinstance(message, dict):
            return None
        role = message.get("role")
        if role in ("system", "developer") and not first:
            system.append(_text(message.get("content")))
        elif role == "user":
            first = _text(message.get("content"))
            break
    system_text = _without_billing_line("\n".join(system))
    names = _tool_names(wire.get("tools"))
    if not (system_text or first or names):
        return None
    return _digest(
        "\x00".join(
            (
                names,
                str(len(system_text)),
                system_text[:SYSTEM_SLICE],
                system_text[-SYSTEM_SLICE:],
                str(len(first)),
                first[:FIRST_MESSAGE_SLICE],
            )
        )
    )


def _without_billing_line(text: str) -> str:
    if text.startswith(BILLING_LINE):
        return text.partition("\n")[2].lstrip("\n")
    return text


def _text(content: Any) -> str:
    """A message's text: the string, or its text parts joined (other parts left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _tool_names(tools: Any) -> str:
    if not isinstance(tools, list):
        return ""
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return ",".join(names)


def _digest(text: str) -> int:
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little")


def deployment_seed(deployment_key: str) -> int:
    """A deployment's share of the rendezvous hash: from its key (model, index, provider,
    upstream model), which every replica with the same config names the same way."""
    return _digest(deployment_key)


def _uniform(conversation: int, seed: int) -> float:
    """splitmix64's finaliser over the pair, as a float in (0, 1): a few integer operations
    instead of a second cryptographic hash per deployment."""
    z = (conversation ^ seed) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return ((z >> 11) + 0.5) / (1 << 53)


def rendezvous(conversation: int, candidates: Sequence[tuple[int, int]]) -> int:
    """The index of the candidate (seed, weight) with the highest weighted rendezvous score
    for the conversation."""
    best, best_score = 0, -math.inf
    for index, (seed, weight) in enumerate(candidates):
        score = -weight / math.log(_uniform(conversation, seed))
        if score > best_score:
            best, best_score = index, score
    return best
