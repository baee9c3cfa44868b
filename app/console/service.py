"""One proxy's console, opened in the server's lifespan when `server.database` is set: the
engine, the log's writer, the run-time keys, the admins and the retention task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console.admin import Admins
from app.console.capture import Capture
from app.console.database import open_database
from app.console.keystore import RuntimeKeys
from app.console.queries import delete_older
from app.console.writer import LogWriter
from app.request_record import RequestRecord
from app.server_config import ServerConfig

logger = logging.getLogger("toolrelay.console")

RETENTION_EVERY = 600.0
"""Seconds between two retention sweeps (the contract asks for at least hourly)."""


class Console:
    def __init__(
        self,
        server: ServerConfig,
        engine: AsyncEngine,
        registry: CollectorRegistry,
        redact: Callable[[str], str],
    ) -> None:
        self.server = server
        self.engine = engine
        self.writer = LogWriter(engine, registry, redact)
        self.keys = RuntimeKeys(engine)
        self.admins = Admins(server.admin_secrets)
        self.bodies = server.request_log.bodies
        self.ui = server.console
        self._retention: asyncio.Task[None] | None = None

    def capture(self, api: str) -> Capture | None:
        """What a request to `api` keeps for its row; None: no row (`bodies: off`)."""
        if self.bodies == "off":
            return None
        return Capture(api, self.bodies == "full")

    def log(self, record: RequestRecord, elapsed: float) -> None:
        self.writer.put(record, elapsed)

    async def start(self) -> None:
        await self.keys.start()
        self.writer.start()
        self._retention = asyncio.create_task(self._sweep(), name="toolrelay-retention")

    async def sweep_once(self) -> int:
        days = self.server.request_log.retention_days
        before = time.time_ns() // 1000 - int(days * 86_400_000_000)
        return await delete_older(self.engine, before)

    async def _sweep(self) -> None:
        while True:
            try:
                await self.sweep_once()
            except Exception as exc:  # the next sweep tries again
                logger.warning("request log retention failed (%s)", type(exc).__name__)
            await asyncio.sleep(RETENTION_EVERY)

    async def aclose(self) -> None:
        if self._retention is not None:
            self._retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention
        await self.keys.aclose()
        await self.writer.aclose()
        await self.engine.dispose()


async def open_console(
    server: ServerConfig, registry: CollectorRegistry, redact: Callable[[str], str]
) -> Console:
    assert server.database is not None
    engine = await open_database(server.database)
    console = Console(server, engine, registry, redact)
    await console.start()
    return console
