"""One score per case (issue 29): the progress line and the table count a case the same way,
and `errors` counts cases, each once, by the reason it was not correct."""

from __future__ import annotations

from typing import Any

import pytest

from app.eval.command import progress_line
from app.eval.scoring import score, summarize, verdict
from app.eval.table import ERRORS_HEADER
from tests.unit.eval.test_suite_and_scoring import ANSWER, CALL_F, audited, case

_RIGHT = ("f", '{"x": 0.5}', "structured")
_RIGHT_TOOL_BAD_ARGUMENT = ("f", '{"x": 5}', "structured")  # schema-valid, check fails


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([_RIGHT], "correct"),
        ([_RIGHT_TOOL_BAD_ARGUMENT], "argument_check"),
        ([("f", "{", "structured")], "invalid_json"),
        ([("g", "{}", "structured")], "wrong_tool"),
        ([], "no_call"),
    ],
)
def test_the_progress_line_says_what_the_table_counts(calls: list[Any], expected: str) -> None:
    result = score(case(CALL_F), "m", 1.0, ANSWER, audited(*calls))
    assert verdict(result) == expected
    assert progress_line(result) == f"m c: {expected}"
    summary = summarize("m", [result])
    assert summary["correct_rate"] == (1.0 if expected == "correct" else 0.0)
    assert summary["errors"] == ({} if expected == "correct" else {expected: 1})


def test_errors_count_each_failed_case_once_and_add_up_with_the_correct_ones() -> None:
    two_failed_checks = {"calls": [{"name": "f", "arguments": {"x": {"between": [0, 1]}}}]}
    two_failed_checks["calls"][0]["arguments"]["y"] = {"nonempty": True}
    results = [
        score(case(two_failed_checks), "m", 1.0, ANSWER, audited(_RIGHT_TOOL_BAD_ARGUMENT)),
        score(case(CALL_F), "m", 1.0, ANSWER, audited(_RIGHT)),
        score(case("text"), "m", 1.0, ANSWER, audited(_RIGHT)),
        score(case("text"), "m", 1.0, None, None, error="upstream_unavailable"),
    ]
    assert results[0].failed_checks == 2
    summary = summarize("m", results)
    assert summary["errors"] == {
        "argument_check": 1,
        "request_upstream_unavailable": 1,
        "unexpected_call": 1,
    }
    assert summary["correct_rate"] * summary["cases"] + sum(summary["errors"].values()) == 4


def test_the_table_says_what_errors_count() -> None:
    assert "cases" in ERRORS_HEADER
