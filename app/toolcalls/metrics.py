"""Tool-call counters in Prometheus' own client, one registry per app (CONTRACT.md names):
every call by source and verdict, every violation by kind, every request that offered tools
by whether the model called one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from app.toolcalls.audit import ToolCallAudit

LABELS = ("model", "provider")
MAX_KEPT_SERIES = 4096


class ToolCallMetrics:
    __slots__ = ("_children", "calls", "requests", "violations")

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "toolrelay_tool_calls",
            "Tool calls answered, by where they came from and their verdict against the tool.",
            [*LABELS, "source", "result"],
            registry=registry,
        )
        self.violations = Counter(
            "toolrelay_tool_call_violations",
            "Schema violations found in tool calls, by kind.",
            [*LABELS, "violation"],
            registry=registry,
        )
        self.requests = Counter(
            "toolrelay_tool_requests",
            "Requests that offered tools, by whether the model called one.",
            [*LABELS, "outcome"],
            registry=registry,
        )
        self._children: dict[tuple[object, ...], Counter] = {}

    def record(self, model: str, provider: str, audit: ToolCallAudit) -> None:
        outcome = "called" if audit.calls else "text_only"
        self._child(self.requests, model, provider, outcome).inc()
        for call in audit.calls:
            self._child(self.calls, model, provider, call.source, call.verdict.result).inc()
            for violation in call.verdict.violations:
                self._child(self.violations, model, provider, violation.kind).inc()

    def _child(self, counter: Counter, *labels: str) -> Counter:
        """A series, looked up once per label set and kept (as app/ops/metrics.py's `series`):
        `labels()` takes a lock and builds a key per call. Bounded, so that no label a client
        chooses can grow it without end."""
        key = (counter, *labels)
        child = self._children.get(key)
        if child is None:
            if len(self._children) >= MAX_KEPT_SERIES:
                self._children.clear()
            child = self._children[key] = counter.labels(*labels)
        return child
