"""Conversation affinity (CONTRACT.md, "Prompt caching"): the turns of one conversation go to
the same deployment of a model, so its prompt cache is warm, from any replica and with no
shared store. A weighted rendezvous hash does it: each deployment scores
`-weight / ln(u)`, `u` a uniform draw seeded by the conversation and the deployment, and the
highest healthy score wins. Every replica computes the same scores; when the winner fails or
rests the next one takes the turn, and the winner gets it back once healthy; across many
conversations each deployment wins in proportion to its weight.

A conversation is named by what the client says names it (`prompt_cache_key`, which the
Messages face fills from `metadata.user_id`; else `user` / `safety_identifier`), else by a
digest of what stays the same on every turn: the tools (their count, first and last names),
the leading system text and the first user message. Only bounded slices of the texts are
hashed (the budget is 10 us a request: bench/affinity.py); two conversations whose slices
agree share a deployment, which costs nothing, as their prefixes then agree too.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from hashlib import blake2b
from typing import Any

from app.openai_types import ChatRequest, TextPart
from app.translators.prompt_cache import BILLING_PREFIX

SLICE = 256
"""Characters hashed from each end of the system text and of the first user message (with
their lengths): enough to tell conversations apart, cheap whatever their size."""


def conversation_key(request: ChatRequest) -> int | None:
    """A 32-bit name for the request's conversation; None when nothing names one (an
    embeddings request's or a refused translation's placeholder). Read from the validated
    request, which holds every field it looks at."""
    extra = request.model_extra or {}
    for field, named in (
        ("prompt_cache_key", extra.get("prompt_cache_key")),
        ("user", request.user),
        ("safety_identifier", extra.get("safety_identifier")),
    ):
        if isinstance(named, str) and named:
            return _digest(f"{field}\x00{named}")
    return _content_key(request)


def _content_key(request: ChatRequest) -> int | None:
    system: list[str] = []
    first = ""
    leading = True
    for message in request.messages:
        role = message.role
        if role == "user":
            first = _text(message.content)
            break
        leading = leading and role in ("system", "developer")
        if leading:
            system.append(_text(message.content))
    system_text = system[0] if len(system) == 1 else "\n".join(system)
    start = _after_billing_line(system_text)
    tools = request.tools
    names = f"{len(tools)}:{tools[0].function.name}:{tools[-1].function.name}" if tools else ""
    if not (system_text or first or names):
        return None
    return _digest(
        "\x00".join(
            (
                names,
                str(len(system_text) - start),
                system_text[start : start + SLICE],
                system_text[-SLICE:] if len(system_text) - start > SLICE else "",
                str(len(first)),
                first[:SLICE],
                first[-SLICE:],
            )
        )
    )


def _after_billing_line(text: str) -> int:
    """Where the system text starts once Claude Code's billing line (and the line breaks after
    it) is left out: an offset, so a 10-40 KB system prompt is not copied to drop it."""
    if not text.startswith(BILLING_PREFIX):  # Claude Code's: it changes on every request
        return 0
    end = text.find("\n")
    if end < 0:
        return len(text)
    while end < len(text) and text[end] == "\n":
        end += 1
    return end


def _text(content: Any) -> str:
    """A message's text: the string, or its text parts joined (other parts left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(part.text for part in content if isinstance(part, TextPart))


def _digest(text: str) -> int:
    """CRC-32: stable across processes (unlike hash()) and the cheapest in the standard
    library; 32 bits are plenty, as two conversations that collide only share a deployment,
    and _uniform mixes the key with each deployment's 64-bit seed."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def deployment_seed(deployment_key: str) -> int:
    """A deployment's share of the rendezvous hash (32 bits): from its key (model, index,
    provider, upstream model), which every replica with the same config names the same way."""
    return int.from_bytes(blake2b(deployment_key.encode(), digest_size=4).digest(), "little")


def _uniform(conversation: int, seed: int) -> float:
    """MurmurHash3's 32-bit finaliser over the pair, as a float in (0, 1): a few small-integer
    operations instead of a second hash per deployment (CPython's arithmetic on 64-bit values
    costs several times more)."""
    h = conversation ^ seed
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return (h + 0.5) / 4294967296.0


def rendezvous(conversation: int, candidates: Sequence[tuple[int, int]]) -> int:
    """The index of the candidate (seed, weight) with the highest weighted rendezvous score
    (`-weight / ln(u)`) for the conversation."""
    best, best_score = 0, -math.inf
    for index, (seed, weight) in enumerate(candidates):
        score = -weight / math.log(_uniform(conversation, seed))
        if score > best_score:
            best, best_score = index, score
    return best
