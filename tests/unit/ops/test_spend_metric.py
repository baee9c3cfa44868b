"""toolrelay_spend_usd_total counts whole nano-dollars, as every other amount does
(CONTRACT.md, Spend): $0.1 then $0.2 reads 0.3, never 0.30000000000000004."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from app.ops.metrics import RequestMetrics

SERIES = 'toolrelay_spend_usd_total{key="alice",model="m",provider="p"}'


def _text(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_a_tenth_and_a_fifth_read_three_tenths() -> None:
    registry = CollectorRegistry()
    metrics = RequestMetrics(registry)
    metrics.count_spend("m", "p", "alice", 0.1)
    metrics.count_spend("m", "p", "alice", 0.2)
    assert f"{SERIES} 0.3\n" in _text(registry)


def test_declared_series_read_zero_and_are_a_counter() -> None:
    registry = CollectorRegistry()
    metrics = RequestMetrics(registry)
    metrics.declare_spend([("m", "p")], ["alice"])
    text = _text(registry)
    assert f"{SERIES} 0.0\n" in text
    assert "# TYPE toolrelay_spend_usd_total counter\n" in text


def test_a_cost_that_is_not_finite_is_not_counted() -> None:
    registry = CollectorRegistry()
    metrics = RequestMetrics(registry)
    metrics.count_spend("m", "p", "alice", 0.25)
    metrics.count_spend("m", "p", "alice", float("nan"))
    assert f"{SERIES} 0.25\n" in _text(registry)
