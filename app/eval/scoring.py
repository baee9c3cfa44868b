"""One answer scored against its case (pure): which calls came structured or recovered, how
they fared against the schema and the case's own checks, and whether the right tools were
called; then per-model totals in the shape `--json` writes (CONTRACT.md)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.eval.suite import Case, Check
from app.toolcalls.audit import ToolCallAudit


@dataclass(slots=True)
class CaseResult:
    model: str
    case: str
    expects_call: bool
    latency_ms: float
    sources: list[str] = field(default_factory=list)  # per call: structured | recovered
    results: list[str] = field(default_factory=list)  # per call: ok | invalid_json | ...
    violations: list[str] = field(default_factory=list)
    outcome: str = "correct"  # correct | wrong_tool | no_call | unexpected_call | incomplete
    failed_checks: int = 0  # of the case's own argument checks
    error: str | None = None  # the request failed: its error code
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # what the case cost, when its model is priced


def score(
    case: Case,
    model: str,
    latency_ms: float,
    completion: dict[str, Any] | None,
    audit: ToolCallAudit | None,
    error: str | None = None,
) -> CaseResult:
    result = CaseResult(model, case.id, case.expects_call, latency_ms, error=error)
    if error is not None or completion is None:
        result.outcome = "error"
        return result
    usage = completion.get("usage") or {}
    result.prompt_tokens = int(usage.get("prompt_tokens") or 0)
    result.completion_tokens = int(usage.get("completion_tokens") or 0)
    calls = audit.calls if audit is not None else []
    for call in calls:
        result.sources.append(call.source)
        result.results.append(call.verdict.result)
        result.violations += [violation.kind for violation in call.verdict.violations]
    names = [call.name for call in calls]
    result.outcome = _outcome(case, names)
    if not isinstance(case.expect, str):
        by_name = {call.name: call.arguments for call in calls}
        for expected in case.expect.calls:
            arguments = _arguments(by_name.get(expected.name))
            result.failed_checks += sum(
                not passes(check, arguments.get(name)) for name, check in expected.arguments.items()
            )
    return result


CORRECT = "correct"


def verdict(result: CaseResult) -> str:
    """The one score of a case, which the progress line prints and the table counts:
    `correct` when the right tools were called with calls that pass the schema and the case's
    argument checks; else the first reason it is not: the request's error (`request_CODE`),
    the tools called (`wrong_tool`, `no_call`, `unexpected_call`, `incomplete`), a call that
    broke its schema (its result: `invalid_json`, `schema_mismatch`...), or `argument_check`."""
    if result.error is not None or result.outcome == "error":
        return f"request_{result.error}"
    if result.outcome != CORRECT:
        return result.outcome
    broken = next((call for call in result.results if call != "ok"), None)
    if broken is not None:
        return broken
    return "argument_check" if result.failed_checks else CORRECT


def _outcome(case: Case, names: list[str]) -> str:
    if not case.expects_call:
        return "unexpected_call" if names else "correct"
    if not names:
        return "no_call"
    if any(name not in case.expected_names for name in names):
        return "wrong_tool"
    return "correct" if case.expected_names <= set(names) else "incomplete"


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        loaded = orjson.loads(text or "")
    except orjson.JSONDecodeError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def passes(check: Check, value: Any) -> bool:
    """Every condition the check sets holds for the value (an absent value fails)."""
    if value is None:
        return False
    conditions = [
        check.one_of is None or value in check.one_of,
        check.subset_of is None
        or (isinstance(value, list) and all(item in check.subset_of for item in value)),
        check.between is None
        or (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and check.between[0] <= value <= check.between[1]
        ),
        check.contains is None
        or (isinstance(value, str) and check.contains.lower() in value.lower()),
        not check.nonempty or (isinstance(value, str | list) and len(value) > 0),
    ]
    return all(conditions)


def summarize(model: str, results: list[CaseResult]) -> dict[str, Any]:
    """One model's line of `--json`: rates of calls (structured, recovered, valid) and of the
    cases that expected a call (wrong tool, no call), counts, latency, tokens and cost. `errors`
    counts cases, each once, by the reason its verdict is not `correct` (so `correct_rate`
    and the errors add up to every case); `violations` counts the calls' schema violations."""
    calls = [source for result in results for source in result.sources]
    verdicts = Counter(call for result in results for call in result.results)
    expecting = [result for result in results if result.expects_call]
    scored = Counter(verdict(result) for result in results)
    correct = scored.pop(CORRECT, 0)
    latencies = sorted(result.latency_ms for result in results)
    return {
        "model": model,
        "cases": len(results),
        "structured_rate": _share(calls.count("structured"), len(calls)),
        "recovered_rate": _share(calls.count("recovered"), len(calls)),
        "valid_rate": _share(verdicts["ok"], len(calls)),
        "wrong_tool_rate": _share(
            sum(r.outcome == "wrong_tool" for r in expecting), len(expecting)
        ),
        "no_call_rate": _share(sum(r.outcome == "no_call" for r in expecting), len(expecting)),
        "correct_rate": _share(correct, len(results)),
        "errors": dict(sorted(scored.items())),
        "violations": dict(sorted(Counter(v for r in results for v in r.violations).items())),
        "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
        "tokens": {
            "prompt": sum(result.prompt_tokens for result in results),
            "completion": sum(result.completion_tokens for result in results),
        },
        "cost_per_task_usd": _cost_per_task(results),
    }


def _cost_per_task(results: list[CaseResult]) -> float | None:
    """The mean cost of a case, when the model is priced (None: no case was, never a 0 that
    would look like a price)."""
    costs = [result.cost_usd for result in results if result.cost_usd is not None]
    return sum(costs) / len(results) if costs else None


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _percentile(ordered: list[float], percent: float) -> float:
    """Nearest-rank percentile; 0 for no samples."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return round(ordered[rank - 1], 2)
