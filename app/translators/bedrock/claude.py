"""What a Messages client asked of Claude that chat has no place for, sent to Claude on
Bedrock in `additionalModelRequestFields` as Bedrock's Claude request parameters take it:
the exact `thinking.budget_tokens` (Claude Code's 31999, not the 16384 of the effort it maps
to), `adaptive` thinking and `output_config.effort` on the models that take them, and the
`anthropic_beta` values Bedrock takes (vertex/betas.py), the rest named in a warning."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.openai_types import ClaudeAsked
from app.translators.anthropic.thinking import Thinking
from app.translators.base import Target
from app.translators.vertex.betas import BEDROCK_BETAS, split_betas

CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?=[-@:.]|$)")
ADAPTIVE_SINCE = (4, 6)  # adaptive thinking: Claude Opus 4.6, Sonnet 4.6 and later
EFFORT_SINCE = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (5, 0)}  # output_config.effort


@dataclass(frozen=True, slots=True)
class ClaudeFields:
    """The thinking to send (its budget None when off, `adaptive` when so), and the rest of
    `additionalModelRequestFields`."""

    thinking: Thinking
    adaptive: bool
    fields: dict[str, Any]
    warning: str | None


def claude_fields(asked: ClaudeAsked | None, planned: Thinking, target: Target) -> ClaudeFields:
    """`planned` is the chat request's thinking (its effort's budget, or off with a warning
    when Claude would refuse it): an exact budget asked replaces the effort's."""
    if asked is None:
        return ClaudeFields(planned, False, {}, None)
    version = _version(target.upstream_model)
    thinking, adaptive = planned, False
    kind = asked.thinking.get("type") if asked.thinking else None
    budget = asked.thinking.get("budget_tokens") if asked.thinking else None
    if kind == "enabled" and planned.budget is not None and isinstance(budget, int):
        thinking = Thinking(budget=budget)
    elif kind == "adaptive" and version is not None and version[1:] >= ADAPTIVE_SINCE:
        adaptive = True
    fields: dict[str, Any] = {}
    if asked.effort is not None and version is not None:
        family, *number = version
        if tuple(number) >= EFFORT_SINCE[family]:
            fields["output_config"] = {"effort": asked.effort}
    betas, warning = split_betas(asked.betas, target.provider, BEDROCK_BETAS)
    if betas:
        fields["anthropic_beta"] = betas
    return ClaudeFields(thinking, adaptive, fields, warning)


def _version(model_id: str) -> tuple[str, int, int] | None:
    """(family, major, minor) of a Claude model id (`us.anthropic.claude-opus-4-6-v1`,
    `anthropic.claude-sonnet-4-20250514-v1:0`); None for a model not Claude."""
    found = CLAUDE_VERSION.search(model_id)
    if found is None:
        return None
    family = model_id[found.start() + len("claude-") :].split("-", 1)[0]
    return family, int(found[1]), int(found[2] or 0)
