"""A Prometheus counter of USD kept in whole nano-dollars, as every other amount is (CONTRACT.md,
Spend): prometheus_client's Counter adds floats, so $0.1 then $0.2 would read
0.30000000000000004; this one adds integers and renders nano / 1e9, which reads 0.3."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

NANO = 1_000_000_000


class NanoCounter(Collector):
    """A labelled counter of USD: each label set's total in whole nano-dollars, and when the
    series was made (Prometheus' `_created`, as prometheus_client's own Counter reports).
    `_type`, `_name` and `_labelnames` are the names prometheus_client's own metrics keep
    them under, so whatever reads a registry's families reads this one the same way."""

    _type = "counter"

    def __init__(
        self, name: str, documentation: str, labels: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labels)
        self._totals: dict[tuple[str, ...], list[int | float]] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def declare(self, *label_values: str) -> None:
        """The series at zero, so a rate over it is right from its first increment."""
        self.add(0, *label_values)

    def add_usd(self, usd: float, *label_values: str) -> None:
        """Adds `usd`, rounded to whole nano-dollars; a cost that is not a finite,
        non-negative number is not counted (a counter never goes down)."""
        if math.isfinite(usd) and usd >= 0:
            self.add(round(usd * NANO), *label_values)

    def add(self, nano: int, *label_values: str) -> None:
        with self._lock:
            found = self._totals.get(label_values)
            if found is None:
                self._totals[label_values] = [nano, time.time()]
            else:
                found[0] += nano

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        with self._lock:
            totals = [(labels, nano, created) for labels, (nano, created) in self._totals.items()]
        for label_values, nano, created in totals:
            family.add_metric(list(label_values), nano / NANO, created=created)
        yield family
