"""The /mcp endpoint's metrics (CONTRACT.md, "MCP: tools from MCP servers"): calls by server,
tool, key and outcome, and their duration by server, on the proxy's registry, declared at
start-up (the series config already knows at zero)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from app.mcp.settings import McpConfig

OUTCOMES = ("ok", "error")
CALL_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


SERIES_CACHED = 4096
"""(server, tool, key, outcome) series kept resolved at most: prometheus_client's `labels()`
takes a lock and builds a key tuple per call; a full cache is emptied, not grown."""


class McpMetrics:
    __slots__ = ("_series", "calls", "duration")

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "toolrelay_mcp_calls",
            "tools/call requests through /mcp, by server label, tool, key name and outcome "
            "(error: the tool's isError, or the server could not be called).",
            ("server", "tool", "key", "outcome"),
            registry=registry,
        )
        self.duration = Histogram(
            "toolrelay_mcp_call_duration_seconds",
            "Time of a tools/call through /mcp, the server's time included.",
            ("server",),
            registry=registry,
            buckets=CALL_BUCKETS,
        )
        self._series: dict[tuple[str, str, str, bool], tuple[Any, Any]] = {}

    def declare(self, config: McpConfig, keys: Iterable[str]) -> None:
        """Every server's duration, and the calls of every tool an `allowed_tools` names with
        every key name, at zero."""
        key_names = list(keys)
        for label, server in config.servers.items():
            self.duration.labels(label)
            for tool in server.allowed_tools or ():
                for key in key_names:
                    for outcome in OUTCOMES:
                        self.calls.labels(label, tool, key, outcome)

    def count(self, server: str, tool: str, key: str, ok: bool, seconds: float) -> None:
        """One call counted and timed, its two series resolved once per label set."""
        labels = (server, tool, key, ok)
        series = self._series.get(labels)
        if series is None:
            if len(self._series) >= SERIES_CACHED:
                self._series.clear()
            outcome = "ok" if ok else "error"
            series = (self.calls.labels(server, tool, key, outcome), self.duration.labels(server))
            self._series[labels] = series
        series[0].inc()
        series[1].observe(seconds)
