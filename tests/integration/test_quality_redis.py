"""The shared verdict window on a real Redis: one script call pushes an answer's verdicts,
trims the list to the window and counts it; two trackers (two replicas) on one Redis judge
one window, and the one that sees the rate fall cools the deployment down and publishes it."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from app.config import CooldownConfig
from app.ops.redis_link import RedisLink
from app.ops.redis_shared import RedisCooldowns, RedisQualityCounts
from app.routing.balancer import Cooldowns
from app.routing.quality import QualityMetrics, QualityTracker
from app.toolcalls.audit import AuditedCall, ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.toolcalls.validation import Verdict

pytestmark = pytest.mark.anyio

KEY = "smart#0:bad/m"
PLAN = ToolPlan({}, None, "fallback", 1, min_valid_rate=0.9, window=10)


def audit(result: str, count: int = 1) -> ToolCallAudit:
    return ToolCallAudit([AuditedCall("f", "{}", "structured", Verdict(result))] * count)  # type: ignore[arg-type]


async def test_the_window_is_trimmed_counted_and_reset(redis_url: str) -> None:
    link = RedisLink(redis_url, 1.0, lambda _operation: None)
    counts = RedisQualityCounts(link, "t:")
    try:
        assert await counts.add(KEY, [True] * 8, 10) == (8, 8)
        assert await counts.add(KEY, [False] * 4, 10) == (6, 10)  # two oks fell out
        await counts.reset(KEY)
        assert await counts.add(KEY, [False], 10) == (0, 1)
    finally:
        await link.aclose()


async def test_two_replicas_judge_one_window(redis_url: str) -> None:
    links, trackers, local = [], [], []
    for _ in range(2):
        link = RedisLink(redis_url, 1.0, lambda _operation: None)
        cooldowns = Cooldowns(CooldownConfig(seconds=30))
        tracker = QualityTracker(
            QualityMetrics(CollectorRegistry()),
            cooldowns,
            RedisQualityCounts(link, "t:"),
            RedisCooldowns(link, "t:"),
        )
        links.append(link)
        trackers.append(tracker)
        local.append(cooldowns)
    try:
        trackers[0].record("smart", KEY, PLAN, audit("ok", 5))
        await trackers[0].aclose()
        trackers[1].record("smart", KEY, PLAN, audit("schema_mismatch", 4))
        await trackers[1].aclose()
        rate = trackers[1].metrics.rate.labels("smart", KEY)._value.get()
        assert rate == 5 / 9
        trackers[1].record("smart", KEY, PLAN, audit("schema_mismatch"))  # 5 of 10
        await trackers[1].aclose()
        assert local[1].cooling_until(KEY, 0) > 0
        assert not local[0].cooling_until(KEY, 0)  # the other replica reads it from Redis
        shared = await RedisCooldowns(links[0], "t:").fetch([KEY])
        assert shared[KEY] == local[1].cooling_until(KEY, 0)
        assert await RedisQualityCounts(links[0], "t:").add(KEY, [True], 10) == (1, 1)
    finally:
        for link in links:
            await link.aclose()
