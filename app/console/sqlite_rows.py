"""The log's inserts into a SQLite file on a plain `sqlite3` connection of their own, in one
thread of their own: one `executemany` and one commit per batch, with no SQLAlchemy or
aiosqlite hop per batch (through them a row cost about twice SQLite's own work). Only the
inserts: reads, keys and PostgreSQL stay on the engine, and the SQL is the engine's own,
compiled from the table (app/console/schema.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy.engine import URL

BUSY_TIMEOUT = 5.0
"""Seconds a batch waits on another writer's lock: less than the writer's own timeout, so a
locked file ends a batch with an error (counted) rather than a batch left running."""


def sqlite_file(url: URL) -> str | None:
    """The file a SQLite URL names; None for an in-memory or URI-style database, which a
    second connection would not share (those keep the engine's path)."""
    if url.get_backend_name() != "sqlite" or url.query:
        return None
    path = url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return path


class SqliteRows:
    """Inserts batches of rows; the connection is opened, used and closed in its thread."""

    def __init__(self, path: str, insert: str) -> None:
        self._path = path
        self._insert = insert
        self._db: sqlite3.Connection | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="toolrelay-log")

    async def write(self, rows: list[tuple[Any, ...]]) -> None:
        """Raises what SQLite raised; a cancelled wait cancels a batch not yet started."""
        await asyncio.get_running_loop().run_in_executor(self._thread, self._write, rows)

    def _write(self, rows: list[tuple[Any, ...]]) -> None:
        if self._db is None:
            self._db = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT)
            self._db.execute("PRAGMA synchronous=NORMAL")
        with self._db:  # one transaction: committed, or rolled back on an error
            self._db.executemany(self._insert, rows)

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._close)
        self._thread.shutdown(wait=False)
