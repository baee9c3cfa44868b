"""The console's tables and their versions: `schema_version` holds the version a database is
at, and `MIGRATIONS` (in order, each one step) bring any older one to the current. Times are
integer microseconds since the epoch (UTC): the same in SQLite and PostgreSQL, indexed and
compared as numbers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection

metadata = MetaData()

schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))


def _request_columns() -> list[Column[Any]]:
    """The request table's columns as version 1 made them (fresh objects on each call)."""
    return [
        Column("id", String(32), primary_key=True),
        Column("created_at", BigInteger, nullable=False),
        Column("request_id", String(128), nullable=False),
        Column("api", String(16), nullable=False),
        Column("stream", Boolean, nullable=False),
        Column("key", String(200), nullable=False),
        Column("model", String(200)),
        Column("provider", String(200)),
        Column("deployment", String(400)),
        Column("status", Integer, nullable=False),
        Column("error_code", String(200)),
        Column("duration_ms", Float, nullable=False),
        Column("ttft_ms", Float),
        Column("attempts", Integer, nullable=False),
        Column("prompt_tokens", Integer, nullable=False),
        Column("completion_tokens", Integer, nullable=False),
        Column("cache_read_tokens", Integer, nullable=False),
        Column("cache_write_tokens", Integer, nullable=False),
        Column("cost_usd", Float),
        Column("tool_calls", Text, nullable=False),
        Column("request", Text),
        Column("response", Text),
    ]


requests = Table(
    "requests",
    metadata,
    *_request_columns(),
    Column("team", String(200)),  # version 2
)

keys = Table(
    "keys",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("digest", String(64), nullable=False, unique=True),
    Column("models", Text),
    Column("limits", Text),
    Column("budget", Text),
    Column("team", String(200)),
    Column("expires_at", BigInteger),
    Column("created_at", BigInteger, nullable=False),
)


async def _version_1(conn: AsyncConnection) -> None:
    """The request log (indexed on time, key and model, each with the id for keyset pages) and
    the run-time keys."""
    v1 = MetaData()
    Table("requests", v1, *_request_columns())
    keys.to_metadata(v1)
    await conn.run_sync(v1.create_all)
    await conn.execute(text("CREATE INDEX ix_requests_time ON requests (created_at, id)"))
    await conn.execute(text("CREATE INDEX ix_requests_key ON requests (key, created_at, id)"))
    await conn.execute(text("CREATE INDEX ix_requests_model ON requests (model, created_at, id)"))


async def _version_2(conn: AsyncConnection) -> None:
    """The key's team on each row, for spend by team."""
    await conn.execute(text("ALTER TABLE requests ADD COLUMN team VARCHAR(200)"))


Migration = Callable[[AsyncConnection], Awaitable[None]]
MIGRATIONS: list[Migration] = [_version_1, _version_2]
CURRENT = len(MIGRATIONS)

_LOCK = 7_364_912
"""PostgreSQL's advisory lock id: two replicas starting at once migrate one after the other."""


async def current_version(conn: AsyncConnection) -> int:
    await conn.run_sync(lambda sync: schema_version.create(sync, checkfirst=True))
    found = (await conn.execute(schema_version.select())).scalar()
    return 0 if found is None else int(found)


async def migrate(conn: AsyncConnection, target: int = CURRENT) -> int:
    """Brings the database to `target` (in the caller's transaction); the version it was at."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text(f"SELECT pg_advisory_xact_lock({_LOCK})"))
    start = await current_version(conn)
    for step in MIGRATIONS[start:target]:
        await step(conn)
    if start < target:
        await conn.execute(schema_version.delete())
        await conn.execute(schema_version.insert().values(version=target))
    return start
