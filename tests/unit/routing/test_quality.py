"""Routing by tool-call quality, in-process: the rolling window's counts, the threshold (never
before 10 judged calls), and the tracker with the memory store turning a low rate into one
cooldown, one log line, one counted cooldown and a gauge, then judging afresh."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import CollectorRegistry

from app.config import CooldownConfig
from app.ops.logs import JsonFormatter
from app.routing.balancer import Cooldowns
from app.routing.quality import MIN_JUDGED, QualityMetrics, QualityTracker, RollingWindow, below
from app.toolcalls.audit import AuditedCall, ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.toolcalls.validation import Verdict

KEY = "smart#1:groq/qwen"
PLAN = ToolPlan({}, None, "fallback", 1, min_valid_rate=0.9, window=20)


def audit(*results: str) -> ToolCallAudit:
    calls = [AuditedCall("f", "{}", "structured", Verdict(result)) for result in results]  # type: ignore[arg-type]
    return ToolCallAudit(calls)


def test_the_window_counts_only_its_last_calls() -> None:
    window = RollingWindow(10)
    assert window.add([True] * 10) == (10, 10)
    assert window.add([False] * 3) == (7, 10)  # three oks fell out
    assert window.add([False] * 10) == (0, 10)
    assert window.add([True]) == (1, 10)


@pytest.mark.parametrize(
    ("ok", "judged", "rate", "expected"),
    [
        (0, MIN_JUDGED - 1, 0.9, False),  # too few judged to say anything
        (8, 10, 0.9, True),
        (9, 10, 0.9, False),  # exactly at the threshold is not below it
        (44, 50, 0.9, True),
        (0, 50, None, False),  # no threshold: measured, never cooled
        (0, 10, 0.0, False),
    ],
)
def test_the_threshold(ok: int, judged: int, rate: float | None, expected: bool) -> None:
    assert below(ok, judged, rate) is expected


def tracker() -> tuple[QualityTracker, QualityMetrics, Cooldowns]:
    registry = CollectorRegistry()
    metrics = QualityMetrics(registry)
    cooldowns = Cooldowns(CooldownConfig(seconds=30))
    return QualityTracker(metrics, cooldowns), metrics, cooldowns


def sample(metrics: QualityMetrics, name: str) -> float | None:
    for family in (metrics.rate, metrics.cooldowns):
        for metric in family.collect():
            for found in metric.samples:
                if found.name == name and found.labels == {"model": "smart", "deployment": KEY}:
                    return found.value
    return None


def test_a_low_rate_cools_the_deployment_down_once_and_is_judged_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quality, metrics, cooldowns = tracker()
    caplog.set_level(logging.INFO, "toolrelay.quality")
    quality.record("smart", KEY, PLAN, audit(*["ok"] * 8))
    assert sample(metrics, "toolrelay_deployment_valid_rate") == 1.0
    quality.record("smart", KEY, PLAN, audit("schema_mismatch"))
    assert not cooldowns.cooling_until(KEY, 0)  # 8 of 9: not judged yet
    quality.record("smart", KEY, PLAN, audit("invalid_json"))
    assert sample(metrics, "toolrelay_deployment_valid_rate") == 0.8
    assert cooldowns.cooling_until(KEY, 1.0) > 1.0
    assert sample(metrics, "toolrelay_quality_cooldowns_total") == 1
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert [(x["event"], x["model"], x["deployment"], x["rate"]) for x in lines] == [
        ("quality_cooldown", "smart", KEY, 0.8)
    ]
    # The window started again: nine more bad calls are not yet a verdict.
    for _ in range(9):
        quality.record("smart", KEY, PLAN, audit("unknown_name"))
    assert sample(metrics, "toolrelay_quality_cooldowns_total") == 1
    assert len(caplog.records) == 1
    quality.record("smart", KEY, PLAN, audit("unknown_name"))
    assert sample(metrics, "toolrelay_quality_cooldowns_total") == 2


def test_answers_without_calls_and_models_without_a_threshold_never_cool_down() -> None:
    quality, metrics, cooldowns = tracker()
    unbounded = ToolPlan({}, None, "pass", 1)
    quality.record("smart", KEY, unbounded, audit())
    assert sample(metrics, "toolrelay_deployment_valid_rate") is None
    quality.record("smart", KEY, unbounded, audit(*["schema_mismatch"] * 60))
    assert sample(metrics, "toolrelay_deployment_valid_rate") == 0.0
    assert not cooldowns.cooling_until(KEY, 0)


def test_a_quality_cooldown_rests_the_configured_seconds() -> None:
    cooldowns = Cooldowns(CooldownConfig(seconds=5))
    assert cooldowns.rest(KEY, 100.0) == 105.0
    assert cooldowns.cooling_until(KEY, 104.9) == 105.0
    assert cooldowns.cooling_until(KEY, 105.0) == 0.0
