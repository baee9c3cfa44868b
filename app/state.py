"""What one running proxy holds (config, routes, upstream clients), kept on `app.state`."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from app.config import Config
from app.errors import Redactor
from app.mcp.metrics import McpMetrics
from app.mcp.registry import McpServers
from app.ops.setup import Operations
from app.relay.upstream import Upstreams
from app.spend.guard import SpendGuard, build_guard
from app.spend.prices import PriceBook
from app.toolcalls.metrics import ToolCallMetrics
from app.toolcalls.validation import Validators
from app.translators.base import Target, Translator, translator_for

if TYPE_CHECKING:  # routing's instances are built in main.py and handed in
    from app.routing.balancer import Balancer
    from app.routing.quality import QualityTracker
    from app.routing.router import Router


def new_completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


@dataclass(slots=True)
class ProxyState:
    config: Config
    router: Router
    upstreams: Upstreams
    translators: dict[str, Translator]
    redact: Redactor
    balancer: Balancer
    registry: CollectorRegistry
    ops: Operations
    quality: QualityTracker
    """Each deployment's recent tool-call verdicts, and the cooldowns they start."""
    spend_prices: PriceBook
    """Every deployment's price (app/spend/prices.py), its price file read at start-up."""
    tool_metrics: ToolCallMetrics = field(init=False)
    mcp: McpServers = field(init=False)
    """The configured MCP servers (their stdio processes stopped by `aclose`)."""
    mcp_metrics: McpMetrics = field(init=False)
    spend: SpendGuard | None = field(init=False)
    """Budgets' reservations (app/spend/guard.py); None when no budget is configured."""
    validators: Validators = field(default_factory=Validators)
    new_id: Callable[[], str] = new_completion_id
    ping_seconds: float = 10.0
    """Silence after which a Messages API stream gets a `ping` event."""
    clock: Callable[[], float] = time.time
    console: Any = None
    """The console (app/console/service.py) when `server.database` is set: opened by the
    server's lifespan, typed loosely so a plain config never imports SQLAlchemy."""

    def __post_init__(self) -> None:
        self.tool_metrics = ToolCallMetrics(self.registry)
        self.mcp = McpServers(self.config.mcp)
        self.mcp_metrics = McpMetrics(self.registry)
        self.mcp_metrics.declare(self.config.mcp, (key.name for key in self.ops.keys.named))
        self.spend = build_guard(self.config, self.ops.store)
        self._declare_spend()

    def _declare_spend(self) -> None:
        """toolrelay_spend_usd_total at zero for every priced (model, provider) and key."""
        if not self.spend_prices.any:
            return
        keys = [key.name for key in self.ops.keys.named]
        self.ops.metrics.declare_spend(self.spend_prices.priced_routes(), keys)

    def translator(self, target: Target) -> Translator:
        return translator_for(self.translators, target)

    async def aclose(self) -> None:
        if self.console is not None:
            await self.console.aclose()
        await self.mcp.aclose()
        await self.quality.aclose()
        await self.upstreams.aclose()
        await self.ops.aclose()
