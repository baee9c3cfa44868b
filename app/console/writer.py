"""The log's writer: finished requests wait in a bounded queue and are inserted in batches by
one task. The request path only enqueues (never waits, never fails); a full queue (a slow or
dead database) costs the row, counted in `toolrelay_request_log_dropped_total`. Memory is
bounded by the queue's size and one batch."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console.rows import COLUMNS, build_row
from app.console.schema import requests
from app.console.sqlite_rows import SqliteRows, sqlite_file
from app.request_record import RequestRecord

logger = logging.getLogger("toolrelay.console")

QUEUE_SIZE = 10_000
BATCH = 500
LINGER = 0.2
"""Seconds the writer waits after a batch's first row for more: one insert and one commit
for many rows, so the per-batch cost (a transaction, a hop to the driver) is shared."""
WRITE_TIMEOUT = 10.0
"""Seconds one batch may take: past it the batch is dropped (counted), so a database that
hangs cannot hold the writer, and with it every row after."""


class LogWriter:
    def __init__(
        self,
        engine: AsyncEngine,
        registry: CollectorRegistry,
        redact: Callable[[str], str],
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        self._engine = engine
        self._redact = redact
        self._queue: asyncio.Queue[tuple[RequestRecord, float, int]] = asyncio.Queue(queue_size)
        self.dropped = Counter(
            "toolrelay_request_log_dropped_total",
            "Request log rows dropped: the database was slow or down, or the queue was full.",
            registry=registry,
        )
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self._insert: str | None = None
        self._sqlite: SqliteRows | None = None

    def put(self, record: RequestRecord, elapsed: float) -> None:
        """Hands a finished request over; drops it (counted) when the queue is full."""
        try:
            self._queue.put_nowait((record, elapsed, time.time_ns() // 1000))
        except asyncio.QueueFull:
            self.dropped.inc()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="toolrelay-request-log")

    async def flush(self) -> None:
        """Waits until every row handed over so far is written or dropped (tests, shutdown)."""
        await self._queue.join()

    async def aclose(self, grace: float = 5.0) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._sqlite is not None:
            await self._sqlite.aclose()

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            if self._queue.qsize() < BATCH - 1:
                await asyncio.sleep(LINGER)
            while len(batch) < BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._write(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _write(self, batch: list[tuple[RequestRecord, float, int]]) -> None:
        try:
            rows = [build_row(record, elapsed, at, self._redact) for record, elapsed, at in batch]
            async with asyncio.timeout(WRITE_TIMEOUT):
                await self._insert_rows(rows)
        except Exception as exc:  # a dead database costs rows, never the writer
            self.dropped.inc(len(batch))
            if not self._failing:
                logger.warning("request log: %d rows dropped (%s)", len(batch), type(exc).__name__)
            self._failing = True
            await asyncio.sleep(0.5)  # a down database is not retried in a tight loop
        else:
            if self._failing:
                logger.warning("request log: writing again")
            self._failing = False

    async def _insert_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """A SQLite file's rows go through SqliteRows, any other database's through the
        engine (the engine is looked at each time: tests swap it for a dead one)."""
        engine = self._engine
        path = sqlite_file(engine.url)
        if path is not None:
            if self._sqlite is None:
                self._sqlite = SqliteRows(path, _compiled_insert(engine.dialect))
            await self._sqlite.write(rows)
            return
        async with engine.begin() as conn:
            if self._insert is None:
                self._insert = _compiled_insert(conn.dialect)
            await conn.exec_driver_sql(self._insert, rows)


def _compiled_insert(dialect: Any) -> str:
    """The row insert as the driver takes it (`?` or `$1` placeholders, in COLUMNS' order),
    compiled once: an executemany of build_row's tuples, no SQLAlchemy work per row."""
    compiled = requests.insert().compile(dialect=dialect)
    if tuple(compiled.positiontup or ()) != COLUMNS:
        raise RuntimeError("the request log's columns and COLUMNS differ")
    return str(compiled)
