"""`reasoning_effort` -> Gemini's `generationConfig.thinkingConfig` (PROTOCOLS C.2).

Gemini asks for thinking two ways by generation: 2.5 models take a token budget
(`thinkingBudget`, with per-model floors), 3 and later a level (`thinkingLevel`). Which one a
model takes is read from its id, by the table below; a model's `reasoning.gemini` setting
overrides it (a tuned model, or an id the table does not know). `includeThoughts` is always
set with thinking on, so thought summaries arrive (as `reasoning_content`).
"""

from __future__ import annotations

from typing import Any

from app.config import GeminiThinking
from app.errors import InvalidRequest
from app.openai_types import ChatRequest
from app.translators.base import Target
from app.translators.reasoning import requested_effort, thinking_budget

# Model-id prefix -> how it takes thinking and its smallest budget ("minimal"); first match
# wins, so longer prefixes come first. None: the model does not think, and Gemini answers
# 400 to any thinkingConfig. Ids matching no prefix are newer models: levels.
GEMINI_THINKING: tuple[tuple[str, GeminiThinking | None, int], ...] = (
    ("gemini-2.5-flash-lite", "budget", 512),
    ("gemini-2.5-pro", "budget", 128),
    ("gemini-2.5", "budget", 1),
    ("gemini-2.0", None, 0),
    ("gemini-1.", None, 0),
)
DEFAULT_SMALLEST_BUDGET = 128  # for a model set to `budget` that the table does not know


def thinking_config(request: ChatRequest, target: Target) -> dict[str, Any] | None:
    """The thinkingConfig for this request, or None to send none."""
    effort = requested_effort(request, "gemini")
    if effort is None:
        return None
    style, smallest = _model_thinking(target)
    if style is None:
        if effort == "none":
            return None
        raise InvalidRequest(
            f"'reasoning_effort' is not supported by gemini model '{target.upstream_model}', "
            "which does not think (set reasoning.gemini in its config if it does)",
            param="reasoning_effort",
        )
    if effort == "none":
        if style == "level":
            raise InvalidRequest(
                f"gemini model '{target.upstream_model}' cannot turn thinking off; "
                "use reasoning_effort 'minimal' for the least",
                param="reasoning_effort",
            )
        return {"thinkingBudget": 0}
    if style == "level":
        return {"thinkingLevel": effort.upper(), "includeThoughts": True}
    budget = thinking_budget(effort, target.reasoning, smallest)
    return {"thinkingBudget": budget, "includeThoughts": True}


def _model_thinking(target: Target) -> tuple[GeminiThinking | None, int]:
    model_id = target.upstream_model.removeprefix("models/")
    style, smallest = next(
        (
            (style, smallest)
            for prefix, style, smallest in GEMINI_THINKING
            if model_id.startswith(prefix)
        ),
        ("level", DEFAULT_SMALLEST_BUDGET),
    )
    configured = target.reasoning.gemini
    if configured is not None:
        return configured, smallest or DEFAULT_SMALLEST_BUDGET
    return style, smallest
