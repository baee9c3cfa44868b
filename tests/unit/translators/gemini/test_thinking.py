"""reasoning_effort -> Gemini thinkingConfig: a budget for 2.5 models (with their floors), a
level for newer ones, refused for models that do not think; the table overridable per model.
Every body must pass Gemini's own rules."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ReasoningBudgets, ReasoningConfig
from app.errors import InvalidRequest
from app.translators.base import Target
from tests.helpers.gemini_rules import request_problems
from tests.unit.translators.gemini.test_request import PROVIDER, body, send


def target(model: str, **reasoning: Any) -> Target:
    return Target("gemini", "gm", PROVIDER, model, reasoning=ReasoningConfig(**reasoning))


def thinking(model: str, effort: str, **reasoning: Any) -> Any:
    sent = orjson.loads(send(target(model, **reasoning), reasoning_effort=effort).body)
    assert request_problems(sent) == []
    return sent.get("generationConfig", {}).get("thinkingConfig")


def refusal(model: str, effort: str) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        send(target(model), reasoning_effort=effort)
    return caught.value


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        ("gemini-2.5-flash", "high", {"thinkingBudget": 16384, "includeThoughts": True}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 4096, "includeThoughts": True}),
        ("gemini-2.5-flash", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-2.5-flash", "minimal", {"thinkingBudget": 1, "includeThoughts": True}),
        ("gemini-2.5-pro", "minimal", {"thinkingBudget": 128, "includeThoughts": True}),
        (
            "models/gemini-2.5-flash-lite",
            "minimal",
            {"thinkingBudget": 512, "includeThoughts": True},
        ),
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
        ("gemini-3-pro-preview", "high", {"thinkingLevel": "HIGH", "includeThoughts": True}),
        (
            "gemini-3-flash-preview",
            "minimal",
            {"thinkingLevel": "MINIMAL", "includeThoughts": True},
        ),
        ("gemini-flash-latest", "low", {"thinkingLevel": "LOW", "includeThoughts": True}),
        ("gemini-2.0-flash", "none", None),
    ],
)
def test_effort_per_model_generation(model: str, effort: str, expected: Any) -> None:
    assert thinking(model, effort) == expected


def test_the_table_is_overridden_by_the_model_config() -> None:
    budgets = ReasoningBudgets(high=20000)
    assert thinking("my-tuned-gemini", "high", gemini="budget", budgets=budgets) == {
        "thinkingBudget": 20000,
        "includeThoughts": True,
    }
    assert thinking("gemini-2.5-flash", "medium", gemini="level") == {
        "thinkingLevel": "MEDIUM",
        "includeThoughts": True,
    }


def test_a_model_that_does_not_think_refuses_effort_by_name() -> None:
    error = refusal("gemini-2.0-flash", "high")
    assert error.param == "reasoning_effort"
    assert "gemini-2.0-flash" in error.message


def test_a_level_model_cannot_turn_thinking_off() -> None:
    assert refusal("gemini-3-pro-preview", "none").param == "reasoning_effort"


def test_the_default_target_passes_gemini_rules_with_thinking() -> None:
    config = body(reasoning_effort="high")["generationConfig"]
    assert config["thinkingConfig"]["includeThoughts"] is True
