"""The log's writer under a slow or dead database: every request answered, every lost row
counted in toolrelay_request_log_dropped_total, the queue never past its bound; and
retention: rows older than `retention_days` (fractions allowed) deleted."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select, update

from app.console.capture import Capture
from app.console.database import make_engine, open_database
from app.console.schema import requests
from app.console.settings import DatabaseConfig
from app.console.writer import LogWriter
from app.request_record import RequestRecord
from tests.console.conftest import ADMIN, console_config, wait_rows
from tests.integration.conftest import USER, serve

pytestmark = pytest.mark.anyio

CHAT = {"model": "demo", "messages": USER}
DEAD = "postgresql://nobody@127.0.0.1:1/gone"
"""Nothing listens on port 1: every connection is refused at once."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def dropped(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("toolrelay_request_log_dropped_total "):
            return float(line.split()[1])
    raise AssertionError("toolrelay_request_log_dropped_total is not exported")


async def test_a_dead_database_costs_rows_counted_never_requests(tmp_path: Path) -> None:
    async with serve(console_config(f"sqlite:///{tmp_path}/d.db")) as proxy:
        console = proxy._transport.app.state.proxy.console  # type: ignore[attr-defined]
        assert dropped((await proxy.get("/metrics")).text) == 0
        console.writer._engine = make_engine(DatabaseConfig(url=DEAD))
        answers = await asyncio.gather(
            *(proxy.post("/v1/chat/completions", json=CHAT) for _ in range(20))
        )
        assert [answer.status_code for answer in answers] == [200] * 20
        await console.writer.flush()
        assert dropped((await proxy.get("/metrics")).text) == 20
        await console.writer._engine.dispose()


def record(number: int) -> RequestRecord:
    done = RequestRecord(f"r{number}", "POST", "/v1/chat/completions", status=200)
    done.capture = Capture("chat", False)
    return done


async def test_the_queue_stays_within_its_bound_while_the_database_hangs(tmp_path: Path) -> None:
    """Another connection holds SQLite's write lock: the writer's batch waits on it while the
    requests keep coming; the queue never holds more than its bound, the rest is counted."""
    path = tmp_path / "slow.db"
    engine = await open_database(DatabaseConfig(url=f"sqlite:///{path}"))
    registry = CollectorRegistry()
    writer = LogWriter(engine, registry, lambda text: text, queue_size=4)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the database hangs for the writer
    writer.start()
    largest = 0
    for number in range(200):
        writer.put(record(number), 0.01)
        largest = max(largest, writer._queue.qsize())
        await asyncio.sleep(0)
    assert largest <= 4
    lost = registry.get_sample_value("toolrelay_request_log_dropped_total")
    assert lost is not None
    assert lost >= 200 - 2 * 4  # at most one batch in flight and one queue
    holder.execute("COMMIT")
    holder.close()
    await writer.flush()
    async with engine.connect() as conn:
        written = (await conn.execute(select(func.count()).select_from(requests))).scalar()
    lost = registry.get_sample_value("toolrelay_request_log_dropped_total")
    assert written + lost == 200
    await writer.aclose()
    await engine.dispose()


async def test_retention_deletes_rows_older_than_fractional_days(database_url: str) -> None:
    config = console_config(database_url, request_log={"retention_days": 0.5})
    async with serve(config) as proxy:
        for _ in range(3):
            await proxy.post("/v1/chat/completions", json=CHAT)
        rows = await wait_rows(proxy, 3)
        console: Any = proxy._transport.app.state.proxy.console  # type: ignore[attr-defined]
        now = time.time_ns() // 1000
        ages = {rows[0]["id"]: 11, rows[1]["id"]: 13, rows[2]["id"]: 49}  # hours
        async with console.engine.begin() as conn:
            for row_id, hours in ages.items():
                at = now - hours * 3_600_000_000
                await conn.execute(
                    update(requests).where(requests.c.id == row_id).values(created_at=at)
                )
        assert await console.sweep_once() == 2
        left = (await proxy.get("/v1/logs", headers=ADMIN)).json()["data"]
        assert [row["id"] for row in left] == [rows[0]["id"]]
