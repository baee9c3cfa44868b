"""Everything one running proxy needs to operate for a team, built from config.yaml's `server`
section: who may call (keys), how much (limits, in memory or in a shared Redis), what it
shares with other replicas (cooldowns, thinking blocks), and what it reports (metrics,
traces)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from app.ops.admission import Admission
from app.ops.keys import KeyRing
from app.ops.limits import Limiter, MemoryLimiter
from app.ops.metrics import RequestMetrics
from app.ops.response_store import Blobs, MemoryBlobs, RedisBlobs, ResponseStore
from app.ops.tracing import Tracing
from app.reasoning.store import MemoryThinkingStore, ThinkingStore
from app.server_config import ServerConfig

if TYPE_CHECKING:
    from app.ops.redis_link import RedisLink
    from app.ops.redis_shared import RedisCooldowns, RedisQualityCounts

STORE_OPERATIONS = ("admit", "settle", "cooldown", "quality", "thinking", "responses")


@dataclass(slots=True)
class Operations:
    keys: KeyRing
    metrics: RequestMetrics
    admission: Admission
    tracing: Tracing
    thinking: ThinkingStore
    responses: ResponseStore
    store: RedisLink | None = None
    """The shared Redis, when the config names one."""
    cooldowns: RedisCooldowns | None = None
    """Cooldowns shared through it; None: each process keeps its own."""
    quality: RedisQualityCounts | None = None
    """Deployments' tool-call verdicts shared through it; None: counted in memory."""

    async def aclose(self) -> None:
        if self.store is not None:
            await self.store.aclose()
        self.tracing.shutdown()


def build_operations(
    server: ServerConfig,
    registry: CollectorRegistry,
    served: Iterable[tuple[str, str]],
    tracing: Tracing | None = None,
) -> Operations:
    """`served`: every (model, provider) a configured model routes to, for the metrics' zero
    series. `tracing` replaces the configured one (tests pass an in-memory exporter)."""
    metrics = RequestMetrics(registry)
    keys = KeyRing(server)
    store: RedisLink | None = None
    limiter: Limiter = MemoryLimiter()
    thinking: ThinkingStore = MemoryThinkingStore()
    blobs: Blobs = MemoryBlobs(server.responses.ttl, server.responses.max_mb * 1024 * 1024)
    cooldowns = None
    quality = None
    if server.store.kind == "redis":
        # Imported here: a single process with the memory store never loads the Redis client.
        from app.ops import redis_shared  # noqa: PLC0415
        from app.ops.redis_limits import RedisLimiter  # noqa: PLC0415
        from app.ops.redis_link import RedisLink  # noqa: PLC0415

        assert server.store.url is not None
        store = RedisLink(server.store.url, server.store.timeout, metrics.count_store_error)
        prefix = server.store.prefix
        limiter = RedisLimiter(store, prefix)
        thinking = redis_shared.RedisThinkingStore(store, prefix)
        cooldowns = redis_shared.RedisCooldowns(store, prefix)
        quality = redis_shared.RedisQualityCounts(store, prefix)
        blobs = RedisBlobs(store, server.responses.ttl)
    limited = [(model, key.name) for model in server.limits for key in keys.named]
    limited += [(model, key.name) for key in keys.named if key.rule for model, _ in served]
    metrics.declare(served, [key.name for key in keys.named], set(limited))
    if store is not None:
        metrics.declare_store(STORE_OPERATIONS)
    return Operations(
        keys=keys,
        metrics=metrics,
        admission=Admission(limiter, server, metrics.count_refusal),
        tracing=tracing
        or Tracing(server.tracing.otlp_endpoint, service_name=server.tracing.service_name),
        thinking=thinking,
        responses=ResponseStore(blobs, server.store.prefix),
        store=store,
        cooldowns=cooldowns,
        quality=quality,
    )
