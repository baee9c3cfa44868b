"""The per-model cap on generated tokens (`max_output_tokens` in config.yaml), which the
Messages and Responses faces apply to what their clients ask for: those clients (Claude Code,
Codex) ask for a model family's maximum, which a smaller model behind the same name refuses."""

from __future__ import annotations

from app.openai_types import ChatRequest
from app.translators.base import Target


def capped(chat_request: ChatRequest, target: Target) -> ChatRequest:
    """The request with `max_completion_tokens` lowered to the target's cap, when above it."""
    limit = target.max_output_tokens
    asked = chat_request.max_completion_tokens
    if limit is None or asked is None or asked <= limit:
        return chat_request
    lowered = chat_request.model_copy(update={"max_completion_tokens": limit})
    lowered._wire = {**chat_request.wire, "max_completion_tokens": limit}
    return lowered
