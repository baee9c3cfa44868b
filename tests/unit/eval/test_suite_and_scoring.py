"""The eval's pure parts: suites are validated on load with errors that name the key; answers
are scored against their case; per-model summaries have CONTRACT.md's `--json` shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.eval.html import render_html
from app.eval.scoring import CaseResult, passes, score, summarize
from app.eval.suite import Case, Check, SuiteError, load_suite
from app.toolcalls.audit import AuditedCall, ToolCallAudit
from app.toolcalls.validation import Validators

TOOLS = (
    "tools:\n  f: {parameters: {type: object, properties: {x: {type: number}}, required: [x]}}\n"
)
CASE = "cases:\n  - {id: one, messages: [{role: user, content: hi}], tools: [f], expect: text}\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def test_the_built_in_suite_loads_and_covers_the_agent_steps() -> None:
    suite = load_suite()
    ids = [case.id for case in suite.cases]
    assert {"intent-classification", "table-selection", "column-pruning", "sql-generation"} <= set(
        ids
    )
    assert {"parallel-weather-and-time", "named-tool-choice", "no-tool-fits"} <= set(ids)
    assert any(m["role"] == "tool" for case in suite.cases for m in case.messages)
    body = suite.request_body(next(c for c in suite.cases if c.id == "named-tool-choice"), "m")
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_time"}}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("tools: [", "invalid YAML"),
        (TOOLS, "cases: Field required"),
        (TOOLS + CASE.replace("tools: [f]", "tools: [g]"), "cases[0]: unknown tool 'g'"),
        (TOOLS + CASE + CASE.removeprefix("cases:\n"), "cases[1].id: 'one' is used twice"),
        (TOOLS + CASE.replace("expect: text", "expect: maybe"), "cases.0.expect"),
        (TOOLS + CASE.replace("expect: text", "tool_choice: g, expect: text"), "tool_choice"),
        (TOOLS + CASE.replace("id: one", "id: one, colour: red"), "Extra inputs"),
    ],
)
def test_a_bad_suite_is_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(str(path))
    assert fragment in str(caught.value)


def test_a_missing_suite_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read"):
        load_suite(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        ({"one_of": ["a", "b"]}, "a", True),
        ({"one_of": ["a", "b"]}, "c", False),
        ({"subset_of": ["a", "b"]}, ["b"], True),
        ({"subset_of": ["a", "b"]}, ["b", "z"], False),
        ({"subset_of": ["a"]}, "a", False),
        ({"between": [0, 1]}, 0.5, True),
        ({"between": [0, 1]}, 1.5, False),
        ({"between": [0, 1]}, True, False),
        ({"contains": "select"}, "SELECT 1", True),
        ({"contains": "select"}, "DROP", False),
        ({"nonempty": True}, [], False),
        ({"nonempty": True}, "x", True),
        ({"one_of": ["a"]}, None, False),
    ],
)
def test_checks(check: dict[str, Any], value: Any, expected: bool) -> None:
    assert passes(Check(**check), value) is expected


SCHEMAS: dict[str, Any] = {"f": {"type": "object", "required": ["x"]}, "g": None}


def audited(*calls: tuple[str, str, str]) -> ToolCallAudit:
    validators = Validators()
    return ToolCallAudit(
        [AuditedCall(n, a, s, validators.classify(n, a, SCHEMAS)) for n, a, s in calls]  # type: ignore[arg-type]
    )


def case(expect: Any) -> Case:
    return Case(
        id="c", messages=[{"role": "user", "content": "hi"}], tools=["f", "g"], expect=expect
    )


CALL_F = {"calls": [{"name": "f", "arguments": {"x": {"between": [0, 1]}}}]}
ANSWER = {"usage": {"prompt_tokens": 3, "completion_tokens": 4}}


@pytest.mark.parametrize(
    ("expect", "calls", "outcome", "failed_checks"),
    [
        (CALL_F, [("f", '{"x": 0.5}', "structured")], "correct", 0),
        (CALL_F, [("f", '{"x": 5}', "recovered")], "correct", 1),
        (CALL_F, [("g", "{}", "structured")], "wrong_tool", 1),
        (CALL_F, [], "no_call", 1),
        ("text", [], "correct", 0),
        ("text", [("f", '{"x": 1}', "structured")], "unexpected_call", 0),
        (
            {"calls": [{"name": "f"}, {"name": "g"}]},
            [("f", '{"x": 1}', "structured")],
            "incomplete",
            0,
        ),
    ],
)
def test_scoring(expect: Any, calls: list[Any], outcome: str, failed_checks: int) -> None:
    result = score(case(expect), "m", 12.0, ANSWER, audited(*calls))
    assert result.outcome == outcome
    assert result.failed_checks == failed_checks
    assert (result.prompt_tokens, result.completion_tokens) == (3, 4)


def test_a_failed_request_is_an_error_result() -> None:
    result = score(case("text"), "m", 5.0, None, None, error="upstream_unavailable")
    assert result.outcome == "error"
    assert summarize("m", [result])["errors"] == {"request_upstream_unavailable": 1}


def test_summary_has_the_contract_shape_and_rates() -> None:
    results = [
        score(case(CALL_F), "m", 10.0, ANSWER, audited(("f", '{"x": 0.5}', "structured"))),
        score(case(CALL_F), "m", 30.0, ANSWER, audited(("f", "{}", "recovered"))),
        score(case(CALL_F), "m", 20.0, ANSWER, audited(("g", "{", "structured"))),
        score(case(CALL_F), "m", 40.0, ANSWER, audited()),
    ]
    summary = summarize("m", results)
    assert set(summary) >= {
        "model",
        "cases",
        "structured_rate",
        "recovered_rate",
        "valid_rate",
        "wrong_tool_rate",
        "no_call_rate",
        "errors",
        "violations",
        "latency_ms",
        "tokens",
    }
    assert summary["cases"] == 4
    assert summary["structured_rate"] == pytest.approx(2 / 3, abs=1e-3)
    assert summary["recovered_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["valid_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["wrong_tool_rate"] == 0.25
    assert summary["no_call_rate"] == 0.25
    assert summary["errors"] == {"no_call": 1, "schema_mismatch": 1, "wrong_tool": 1}
    assert summary["violations"] == {"missing_required": 1}
    assert summary["latency_ms"] == {"p50": 20.0, "p95": 40.0}
    assert summary["tokens"] == {"prompt": 12, "completion": 16}


def test_the_html_page_is_self_contained_and_names_every_model() -> None:
    results: list[CaseResult] = [score(case("text"), "m", 1.0, ANSWER, audited())]
    page = render_html([summarize("alpha", results), summarize("beta", results)])
    assert "<svg" in page
    assert "alpha" in page
    assert "beta" in page
    assert "http" not in page.replace("http://www.w3.org", "")
