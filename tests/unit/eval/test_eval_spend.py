"""`eval` and spend (CONTRACT.md, "Spend"): a priced model's cases carry what they cost and the
summary its mean per task (an unpriced model's none, never 0); a case under a model budget is
settled as a server's request is, so eval leaves no reservation behind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.config import parse_config
from app.eval.runner import Job, _one
from app.eval.scoring import summarize
from app.eval.suite import load_suite
from app.main import build_state
from app.spend.ledger import NANO

PRICE = {"input": 2.0, "output": 8.0}  # USD per million tokens


def config(price: dict[str, float] | None, budget: bool) -> Any:
    model: dict[str, Any] = {"name": "demo", "provider": "demo", "model": "demo"}
    if price is not None:
        model["price"] = price
    raw: dict[str, Any] = {"providers": {"demo": {"kind": "demo"}}, "models": [model]}
    if budget:
        raw["server"] = {"budgets": {"demo": {"usd": 5, "period": "day"}}}
    return parse_config(raw, "eval.yaml", {})


def run_cases(price: dict[str, float] | None, budget: bool) -> tuple[list[Any], Any]:
    suite = load_suite()

    async def go() -> tuple[list[Any], Any]:
        proxy = build_state(config(price, budget))
        try:
            results = [await _one(proxy, suite, Job("demo", case, 0)) for case in suite.cases]
            usage = None
            if proxy.spend is not None:
                usage = await proxy.spend.ledger.usage(proxy.spend.model_budgets())
            return results, usage
        finally:
            await proxy.aclose()

    return asyncio.run(go())


def test_a_priced_models_cases_cost_what_their_tokens_do() -> None:
    results, _ = run_cases(PRICE, budget=False)
    for result in results:
        expected = result.prompt_tokens * 2e-6 + result.completion_tokens * 8e-6
        assert result.cost_usd == pytest.approx(expected, rel=1e-9), result
    summary = summarize("demo", results)
    total = sum(r.prompt_tokens * 2e-6 + r.completion_tokens * 8e-6 for r in results)
    assert summary["cost_per_task_usd"] == pytest.approx(total / len(results), rel=1e-9)
    assert summary["cost_per_task_usd"] > 0


def test_an_unpriced_model_shows_no_cost() -> None:
    results, _ = run_cases(None, budget=False)
    assert all(result.cost_usd is None for result in results)
    assert summarize("demo", results)["cost_per_task_usd"] is None


def test_cases_under_a_model_budget_are_settled() -> None:
    results, usage = run_cases(PRICE, budget=True)
    ((spent, reserved),) = usage
    assert reserved == 0
    assert spent == pytest.approx(sum(r.cost_usd for r in results) * NANO, abs=len(results))
