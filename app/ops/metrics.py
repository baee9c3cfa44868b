"""The request metrics of CONTRACT.md ("Running it for a team") in Prometheus' own client, on
the app's registry: every family declared at start-up, and the series whose labels config
already knows (models, providers, key names) created at zero, so a rate over them is right
from the first increment."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.ops.nano_counter import NanoCounter

NONE = "none"
"""The label of a request that never reached a model (refused before routing)."""

DURATION_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120, 300, 600)
FIRST_TOKEN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
OVERHEAD_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)
LIMITS = ("rpm", "tpm", "concurrent", "store")
TOKEN_TYPES = ("prompt", "completion", "cache_read", "cache_write")


class RequestSeries(NamedTuple):
    """The series one finished request updates, for one (model, provider, key, status)."""

    requests: Counter
    duration: Histogram
    overhead: Histogram
    first_token: Histogram
    prompt_tokens: Counter
    completion_tokens: Counter
    cache_read_tokens: Counter
    cache_write_tokens: Counter


class RequestMetrics:
    __slots__ = (
        "_in_flight",
        "_series",
        "duration",
        "fallbacks",
        "first_token",
        "overhead",
        "rate_limited",
        "requests",
        "retries",
        "spend",
        "store_errors",
        "streams_in_flight",
        "tokens",
        "upstream_errors",
    )

    def __init__(self, registry: CollectorRegistry) -> None:
        self._series: dict[tuple[str, str, str, str], RequestSeries] = {}
        self._in_flight: dict[tuple[str, str], Gauge] = {}

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, ("model", "provider"), registry=registry, buckets=buckets)

        self.requests = counter(
            "toolrelay_requests",
            "Requests answered, by configured model, provider, key name and HTTP status.",
            ("model", "provider", "key", "status"),
        )
        self.duration = histogram(
            "toolrelay_request_duration_seconds",
            "Whole request time, to the last byte of the answer.",
            DURATION_BUCKETS,
        )
        self.first_token = histogram(
            "toolrelay_time_to_first_token_seconds",
            "Streams: from the request to the first chunk the client could be sent.",
            FIRST_TOKEN_BUCKETS,
        )
        self.overhead = histogram(
            "toolrelay_overhead_seconds",
            "Time spent in the proxy itself before the answer's headers: the time to them "
            "minus the time spent waiting on upstreams (calls, first tokens, backoffs).",
            OVERHEAD_BUCKETS,
        )
        self.tokens = counter(
            "toolrelay_tokens",
            "Tokens the upstreams reported, by type: prompt (all input, cached or not), "
            "completion, and of the prompt, cache_read and cache_write (prompt caching).",
            ("model", "provider", "key", "type"),
        )
        self.spend = NanoCounter(
            "toolrelay_spend_usd",
            "USD the answers of priced models cost (every attempt's, MCP calls included).",
            ("model", "provider", "key"),
            registry,
        )
        self.upstream_errors = counter(
            "toolrelay_upstream_errors",
            "Failed upstream attempts, by the status the proxy made of them.",
            ("model", "provider", "status"),
        )
        self.retries = counter(
            "toolrelay_retries", "Attempts after a model's first.", ("model", "provider")
        )
        self.fallbacks = counter(
            "toolrelay_fallbacks",
            "Requests passed from a failing model to one of its fallbacks.",
            ("model", "fallback"),
        )
        self.rate_limited = counter(
            "toolrelay_rate_limited",
            "Requests refused by the proxy's own limits, by the limit (store: the store was "
            "down and on_error is closed).",
            ("model", "key", "limit"),
        )
        self.streams_in_flight = Gauge(
            "toolrelay_streams_in_flight",
            "Streams being relayed now.",
            ("model", "provider"),
            registry=registry,
        )
        self.store_errors = counter(
            "toolrelay_store_errors",
            "Calls to the shared store that failed or were skipped while it was down.",
            ("operation",),
        )

    def series(self, model: str, provider: str, key: str, status: str) -> RequestSeries:
        """The request's series, looked up once per label set and kept: `labels()` takes a lock
        and builds a key per call, which a request would otherwise pay six times."""
        found = self._series.get((model, provider, key, status))
        if found is None:
            found = RequestSeries(
                self.requests.labels(model, provider, key, status),
                self.duration.labels(model, provider),
                self.overhead.labels(model, provider),
                self.first_token.labels(model, provider),
                *(self.tokens.labels(model, provider, key, kind) for kind in TOKEN_TYPES),
            )
            self._series[(model, provider, key, status)] = found
        return found

    def in_flight(self, model: str, provider: str) -> Gauge:
        """The streams-in-flight gauge of a model's provider, looked up once and kept (as
        `series`: once a stream)."""
        found = self._in_flight.get((model, provider))
        if found is None:
            found = self._in_flight[(model, provider)] = self.streams_in_flight.labels(
                model, provider
            )
        return found

    def count_spend(self, model: str, provider: str, key: str, usd: float) -> None:
        """A priced request's cost. Its series is made here, never with the request's other
        series: an unpriced model must have no spend series at all (a 0 would look like a
        price)."""
        self.spend.add_usd(usd, model, provider, key)

    def count_refusal(self, model: str, key: str, limit: str) -> None:
        self.rate_limited.labels(model, key, limit).inc()

    def declare(
        self,
        routes: Iterable[tuple[str, str]],
        keys: Iterable[str],
        limited: Iterable[tuple[str, str]],
    ) -> None:
        """Series at zero for every (model, provider) a route serves with every key name, and
        every (model, key) a limit applies to."""
        key_names = list(keys)
        for model, provider in routes:
            self.retries.labels(model, provider)
            for key in key_names:
                for token_type in TOKEN_TYPES:
                    self.tokens.labels(model, provider, key, token_type)
        for model, key in limited:
            for limit in LIMITS:
                self.rate_limited.labels(model, key, limit)

    def declare_spend(self, priced: Iterable[tuple[str, str]], keys: Iterable[str]) -> None:
        """Spend series at zero for every priced (model, provider) with every key name: an
        unpriced model gets none, so its spend never reads as a $0 one."""
        key_names = list(keys)
        for model, provider in priced:
            for key in key_names:
                self.spend.declare(model, provider, key)

    def declare_store(self, operations: Iterable[str]) -> None:
        for operation in operations:
            self.store_errors.labels(operation)

    def count_store_error(self, operation: str) -> None:
        self.store_errors.labels(operation).inc()
