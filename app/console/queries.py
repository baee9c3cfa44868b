"""The request log read back: /v1/logs' pages (newest first, keyset pagination on
(created_at, id), so page N costs what page 1 does) and one row with its bodies."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console.filters import LogFilters, encode_cursor, iso
from app.console.schema import requests

T = requests.c
SUMMARY = [c for c in requests.columns if c.name not in ("request", "response", "team")]


def _conditions(filters: LogFilters) -> list[Any]:
    found: list[Any] = []
    for column, value in (
        (T.model, filters.model),
        (T.key, filters.key),
        (T.status, filters.status),
        (T.api, filters.api),
    ):
        if value is not None:
            found.append(column == value)
    if filters.since is not None:
        found.append(T.created_at >= filters.since)
    if filters.until is not None:
        found.append(T.created_at < filters.until)
    if filters.after is not None:
        created, row_id = filters.after
        found.append(or_(T.created_at < created, and_(T.created_at == created, T.id < row_id)))
    return found


async def list_rows(engine: AsyncEngine, filters: LogFilters) -> dict[str, Any]:
    query = (
        select(*SUMMARY)
        .where(*_conditions(filters))
        .order_by(T.created_at.desc(), T.id.desc())
        .limit(filters.limit + 1)
    )
    async with engine.connect() as conn:
        found = (await conn.execute(query)).mappings().all()
    page = [to_row(row) for row in found[: filters.limit]]
    cursor = None
    if len(found) > filters.limit:
        last = found[filters.limit - 1]
        cursor = encode_cursor(last["created_at"], last["id"])
    return {"data": page, "next_cursor": cursor}


async def one_row(engine: AsyncEngine, row_id: str) -> dict[str, Any] | None:
    async with engine.connect() as conn:
        found = (await conn.execute(select(requests).where(T.id == row_id))).mappings().first()
    if found is None:
        return None
    row = to_row(found)
    for name in ("request", "response"):
        if found[name] is not None:
            row[name] = stored_body(found[name])
    return row


def stored_body(text: str) -> Any:
    """A stored body (kept as it came, so not always JSON: a client's malformed one)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"unparsed": text[:4096]}


def to_row(found: Any) -> dict[str, Any]:
    """A database row in the contract's shape."""
    return {
        "id": found["id"],
        "created_at": iso(found["created_at"]),
        "request_id": found["request_id"],
        "api": found["api"],
        "stream": bool(found["stream"]),
        "key": found["key"],
        "model": found["model"],
        "provider": found["provider"],
        "deployment": found["deployment"],
        "status": found["status"],
        "error_code": found["error_code"],
        "duration_ms": found["duration_ms"],
        "ttft_ms": found["ttft_ms"],
        "attempts": found["attempts"],
        "usage": {
            "prompt_tokens": found["prompt_tokens"],
            "completion_tokens": found["completion_tokens"],
            "cache_read_tokens": found["cache_read_tokens"],
            "cache_write_tokens": found["cache_write_tokens"],
        },
        "cost_usd": found["cost_usd"],
        "tool_calls": orjson.loads(found["tool_calls"]),
    }


async def delete_older(engine: AsyncEngine, before_us: int) -> int:
    async with engine.begin() as conn:
        result = await conn.execute(requests.delete().where(T.created_at < before_us))
    return int(result.rowcount or 0)
