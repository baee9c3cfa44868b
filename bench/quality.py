"""What routing by tool-call quality adds per audited call, in-process: the deployment's
rolling count in the memory store (window kept full, threshold checked, gauge set), against a
model with `min_valid_rate` so every step runs and none trips a cooldown. Budget: ≤ 5 µs of
CPU per audited call (issue 22). Requests without tools never reach it.

Run: python -m bench.quality"""

from __future__ import annotations

import sys
import time

from prometheus_client import CollectorRegistry

from app.config import CooldownConfig
from app.routing.balancer import Cooldowns
from app.routing.quality import QualityMetrics, QualityTracker
from app.toolcalls.audit import AuditedCall, ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.toolcalls.validation import Verdict

PLAN = ToolPlan({}, None, "fallback", 1, min_valid_rate=0.5, window=50)
DEPLOYMENT = "m#0:p/m"
ROUNDS = 50_000


def cpu_us_per_answer(tracker: QualityTracker, audit: ToolCallAudit) -> float:
    """Best of five runs of CPU time (process_time: what the event loop would spend)."""
    record = tracker.record
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(ROUNDS):
            record("m", DEPLOYMENT, PLAN, audit)
        best = min(best, time.process_time() - started)
    return best / ROUNDS * 1e6


def main() -> None:
    tracker = QualityTracker(QualityMetrics(CollectorRegistry()), Cooldowns(CooldownConfig()))
    ok = AuditedCall("sql", "{}", "structured", Verdict("ok"))
    lines = [
        "| rolling count (memory store) | µs CPU per answer | µs CPU per audited call |",
        "| --- | ---: | ---: |",
    ]
    for calls in (1, 4):
        audit = ToolCallAudit([ok] * calls)
        for _ in range(100):  # the window full, the gauge's series made
            tracker.record("m", DEPLOYMENT, PLAN, audit)
        per_answer = cpu_us_per_answer(tracker, audit)
        lines.append(
            f"| answer with {calls} call(s) | {per_answer:.2f} | {per_answer / calls:.2f} |"
        )
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
