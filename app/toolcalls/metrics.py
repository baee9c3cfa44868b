"""Tool-call counters in Prometheus' own client, one registry per app (CONTRACT.md names):
every call by source and verdict, every violation by kind, every request that offered tools
by whether the model called one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from app.toolcalls.audit import ToolCallAudit

LABELS = ("model", "provider")


class ToolCallMetrics:
    __slots__ = ("calls", "requests", "violations")

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

    def record(self, model: str, provider: str, audit: ToolCallAudit) -> None:
        outcome = "called" if audit.calls else "text_only"
        self.requests.labels(model, provider, outcome).inc()
        for call in audit.calls:
            self.calls.labels(model, provider, call.source, call.verdict.result).inc()
            for violation in call.verdict.violations:
                self.violations.labels(model, provider, violation.kind).inc()
