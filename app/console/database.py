"""The console's engine: one async code path for SQLite (aiosqlite) and PostgreSQL
(asyncpg), the schema brought to the current version when it opens."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.console.schema import migrate
from app.console.settings import DatabaseConfig


def make_engine(config: DatabaseConfig) -> AsyncEngine:
    """SQLite in WAL mode (readers never wait for the writer) with a busy timeout, so the
    log's writer, the pages and the keys share one file."""
    url = config.driver_url
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 10})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(url, pool_size=5, max_overflow=5, pool_pre_ping=True)


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


async def open_database(config: DatabaseConfig) -> AsyncEngine:
    engine = make_engine(config)
    async with engine.begin() as conn:
        await migrate(conn)
    return engine
