"""Routing by tool-call quality: each deployment's audited calls (ok or not) counted over its
last `window` calls, and a deployment whose share of valid calls falls below the model's
`min_valid_rate` cooled down as a failing one is (CONTRACT.md, "Routing by tool-call quality").

The counting is pure (RollingWindow, below); the counts live in memory (one process) or in the
shared store (replicas agree), and the tracker turns them into a gauge, a cooldown, a counter
and one log line. Only requests that offered tools reach it: the rest pay nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from app.ops.logs import FIELDS, FieldsLine
from app.routing.balancer import Cooldowns, SharedCooldowns
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.plan import ToolPlan

logger = logging.getLogger("toolrelay.quality")

MIN_JUDGED = 10
"""Calls a deployment must have had judged before its rate can cool it down: a couple of bad
calls from a fresh deployment are noise, not a measurement."""


def below(ok: int, judged: int, min_valid_rate: float | None) -> bool:
    """Whether `ok` valid calls out of `judged` fall below the threshold (when there is one
    and enough calls were judged)."""
    return min_valid_rate is not None and judged >= MIN_JUDGED and ok < min_valid_rate * judged


class RollingWindow:
    """The last `size` verdicts (True: the call validated) and how many of them are ok, kept
    up to date as verdicts come in: O(1) per call, no rescan."""

    __slots__ = ("_ok", "_verdicts")

    def __init__(self, size: int) -> None:
        self._verdicts: deque[bool] = deque(maxlen=size)
        self._ok = 0

    def add(self, verdicts: Sequence[bool]) -> tuple[int, int]:
        """Takes in an answer's verdicts; returns (ok, judged) over the window."""
        window = self._verdicts
        size = window.maxlen
        for verdict in verdicts:
            if len(window) == size:
                self._ok -= window[0]
            window.append(verdict)
            self._ok += verdict
        return self._ok, len(window)


class SharedCounts(Protocol):
    """The counts in the shared store: one round trip per audit (app/ops/redis_shared.py)."""

    async def add(
        self, deployment: str, verdicts: Sequence[bool], window: int
    ) -> tuple[int, int]: ...

    async def reset(self, deployment: str) -> None: ...


class QualityMetrics:
    """`toolrelay_deployment_valid_rate` and `toolrelay_quality_cooldowns_total`, on the app's
    registry; each series looked up once and kept (a labels() call takes a lock)."""

    __slots__ = ("_rates", "cooldowns", "rate")

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("model", "deployment")
        self.rate = Gauge(
            "toolrelay_deployment_valid_rate",
            "Share of a deployment's last `window` audited tool calls that validated.",
            labels,
            registry=registry,
        )
        self.cooldowns = Counter(
            "toolrelay_quality_cooldowns",
            "Deployments cooled down because their tool calls validated too rarely.",
            labels,
            registry=registry,
        )
        self._rates: dict[tuple[str, str], Gauge] = {}

    def set_rate(self, model: str, deployment: str, rate: float) -> None:
        series = self._rates.get((model, deployment))
        if series is None:
            series = self._rates[(model, deployment)] = self.rate.labels(model, deployment)
        series.set(rate)


class QualityTracker:
    """Feeds every audit of a request that offered tools into its deployment's window, and
    cools the deployment down when its rate falls below the model's threshold. With a shared
    store the counting runs as a task (the audit callback is synchronous, and the answer
    should not wait on Redis); the memory store counts in line."""

    __slots__ = ("_cooldowns", "_memory", "_shared", "_shared_cooldowns", "_tasks", "metrics")

    def __init__(
        self,
        metrics: QualityMetrics,
        cooldowns: Cooldowns,
        shared: SharedCounts | None = None,
        shared_cooldowns: SharedCooldowns | None = None,
    ) -> None:
        self.metrics = metrics
        self._cooldowns = cooldowns
        self._shared = shared
        self._shared_cooldowns = shared_cooldowns
        self._memory: dict[str, RollingWindow] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def record(self, model: str, deployment: str, plan: ToolPlan, audit: ToolCallAudit) -> None:
        """One answer's verdicts; an answer without calls judges nothing."""
        if not audit.calls:
            return
        verdicts = [call.verdict.result == "ok" for call in audit.calls]
        if self._shared is not None:
            task = asyncio.get_running_loop().create_task(
                self._record_shared(model, deployment, plan, verdicts)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        window = self._memory.get(deployment)
        if window is None:
            window = self._memory[deployment] = RollingWindow(plan.window)
        ok, judged = window.add(verdicts)
        self.metrics.set_rate(model, deployment, ok / judged)
        if below(ok, judged, plan.min_valid_rate):
            del self._memory[deployment]  # judged afresh once the cooldown is over
            self._cool_down(model, deployment, ok / judged)

    async def _record_shared(
        self, model: str, deployment: str, plan: ToolPlan, verdicts: list[bool]
    ) -> None:
        assert self._shared is not None
        ok, judged = await self._shared.add(deployment, verdicts, plan.window)
        if not judged:  # the store is down: nothing measured
            return
        self.metrics.set_rate(model, deployment, ok / judged)
        if below(ok, judged, plan.min_valid_rate):
            await self._shared.reset(deployment)
            until = self._cool_down(model, deployment, ok / judged)
            if self._shared_cooldowns is not None:
                await self._shared_cooldowns.publish(deployment, until, time.time())

    def _cool_down(self, model: str, deployment: str, rate: float) -> float:
        """Rests the deployment for router.cooldown.seconds, counts and logs it once."""
        until = self._cooldowns.rest(deployment, time.time())
        self.metrics.cooldowns.labels(model, deployment).inc()
        fields = {
            "event": "quality_cooldown",
            "model": model,
            "deployment": deployment,
            "rate": round(rate, 4),
        }
        logger.warning("%s", FieldsLine(fields), extra={FIELDS: fields})
        return until

    async def aclose(self) -> None:
        """Lets the counting still under way finish (a test reads the store next)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
