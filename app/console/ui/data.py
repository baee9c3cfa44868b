"""What /ui's pages show, read from the log (and, for MCP, the proxy's own counters): sums
grouped in the database, percentiles and hourly series over the last day in Python."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import orjson
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console.schema import requests

T = requests.c
HOUR = 3_600_000_000
WINDOW_HOURS = 24
SAMPLE = 50_000
"""The most rows the Models page reads for its day of charts."""


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


async def model_stats(engine: AsyncEngine) -> dict[str, Any]:
    """Per model: totals over the day, and per hour (oldest first) requests, the share of
    valid tool calls, latency p50/p95 and cost."""
    now = time.time_ns() // 1000
    start = (now // HOUR - WINDOW_HOURS + 1) * HOUR
    query = (
        select(T.model, T.created_at, T.duration_ms, T.cost_usd, T.tool_calls)
        .where(T.created_at >= start, T.model.is_not(None))
        .order_by(T.created_at.desc())
        .limit(SAMPLE)
    )
    async with engine.connect() as conn:
        found = (await conn.execute(query)).all()
    buckets: dict[str, list[dict[str, Any]]] = defaultdict(
        lambda: [
            {"n": 0, "ok": 0, "calls": 0, "ms": [], "cost": 0.0, "priced": False}
            for _ in range(WINDOW_HOURS)
        ]
    )
    for model, created, duration, cost, calls in found:
        bucket = buckets[model][min(WINDOW_HOURS - 1, (created - start) // HOUR)]
        bucket["n"] += 1
        bucket["ms"].append(duration)
        bucket["cost"] += cost or 0.0
        bucket["priced"] |= cost is not None
        for call in orjson.loads(calls):
            bucket["calls"] += 1
            bucket["ok"] += call.get("result") == "ok"
    return {model: _summary(hours) for model, hours in sorted(buckets.items())}


def _summary(hours: list[dict[str, Any]]) -> dict[str, Any]:
    every = [ms for hour in hours for ms in hour["ms"]]
    calls = sum(hour["calls"] for hour in hours)
    return {
        "requests": sum(hour["n"] for hour in hours),
        "valid": None if not calls else sum(hour["ok"] for hour in hours) / calls,
        "calls": calls,
        "p50": percentile(every, 0.5),
        "p95": percentile(every, 0.95),
        "cost": sum(hour["cost"] for hour in hours),
        "priced": any(hour["priced"] for hour in hours),
        "series": {
            "requests": [hour["n"] for hour in hours],
            "valid %": [None if not h["calls"] else 100 * h["ok"] / h["calls"] for h in hours],
            "p50 ms": [percentile(hour["ms"], 0.5) for hour in hours],
            "p95 ms": [percentile(hour["ms"], 0.95) for hour in hours],
            "cost USD": [hour["cost"] if hour["priced"] else None for hour in hours],
        },
    }


async def spend_by(engine: AsyncEngine, column: str) -> list[tuple[str, int, float | None]]:
    """(name, requests, USD) grouped by `key`, `team` or `model`, most spent first; USD None
    when none of its requests was priced."""
    group = T[column]
    query = (
        select(group, func.count(), func.sum(T.cost_usd))
        .group_by(group)
        .order_by(func.coalesce(func.sum(T.cost_usd), 0.0).desc())
    )
    async with engine.connect() as conn:
        found = (await conn.execute(query)).all()
    return [(name or "-", int(n), None if usd is None else float(usd)) for name, n, usd in found]


def mcp_calls(registry: CollectorRegistry) -> list[dict[str, Any]]:
    """toolrelay_mcp_calls by server and tool (keys summed), busiest first."""
    counts: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: {"ok": 0, "error": 0})
    for metric in registry.collect():
        if metric.name != "toolrelay_mcp_calls":
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                labels = sample.labels
                counts[(labels["server"], labels["tool"])][labels["outcome"]] += sample.value
    rows = [
        {"server": s, "tool": t, "ok": int(c["ok"]), "error": int(c["error"])}
        for (s, t), c in counts.items()
    ]
    return sorted(rows, key=lambda r: (-(r["ok"] + r["error"]), r["server"], r["tool"]))
