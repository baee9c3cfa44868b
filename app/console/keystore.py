"""Keys made at run time (POST /v1/keys): stored as the SHA-256 of their secret, shared by
every replica of one database. Each replica reloads them every second (a revoked or expired
key is refused within 2 s) and asks the database at once for a key it does not know (a key
made on another replica works at once)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import string
import time
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console.errors import Conflict
from app.console.key_body import NewKey, expires_us, key_view
from app.console.schema import keys as keys_table
from app.errors import AuthenticationFailed
from app.ops.keys import ClientKey
from app.server_config import BudgetConfig, Limits

logger = logging.getLogger("toolrelay.console")

REFRESH = 1.0
"""Seconds between reloads, and how long an unknown digest is remembered as unknown."""
_ALPHABET = string.ascii_letters + string.digits
_UNKNOWN_MAX = 10_000
_Entry = tuple[ClientKey, int | None]


def new_secret() -> str:
    return "tr-" + "".join(secrets.choice(_ALPHABET) for _ in range(40))


def client_key(row: Any) -> ClientKey:
    models = None if row["models"] is None else orjson.loads(row["models"])
    budget = None if row["budget"] is None else BudgetConfig(**orjson.loads(row["budget"]))
    return ClientKey(
        row["name"],
        None if models is None else frozenset(models),
        frozenset(m[:-2] for m in models or () if m.endswith("/*")),
        Limits(**orjson.loads(row["limits"] or b"{}")),
        scope=f"api.{row['digest'][:24]}",
        team=row["team"],
        budget=budget,
    )


def view(row: Any) -> dict[str, Any]:
    return key_view(
        row["name"],
        models=None if row["models"] is None else orjson.loads(row["models"]),
        limits=orjson.loads(row["limits"] or b"{}"),
        budget=None if row["budget"] is None else orjson.loads(row["budget"]),
        team=row["team"],
        expires_at=row["expires_at"],
        created_at=row["created_at"],
        source="api",
    )


class RuntimeKeys:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._known: dict[str, _Entry] = {}
        self._unknown: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def any(self) -> bool:
        """Whether some key exists (then every /v1/ request needs one)."""
        return bool(self._known)

    async def start(self) -> None:
        await self.reload()
        self._task = asyncio.create_task(self._refresh(), name="toolrelay-keys")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(REFRESH)
            try:
                await self.reload()
            except Exception as exc:  # the last known keys stay until the database is back
                logger.warning("keys: cannot reload (%s)", type(exc).__name__)

    async def reload(self) -> None:
        async with self._engine.connect() as conn:
            found = (await conn.execute(select(keys_table))).mappings().all()
        self._known = {row["digest"]: (client_key(row), row["expires_at"]) for row in found}
        self._unknown.clear()

    async def identify(self, presented: bytes) -> ClientKey:
        digest = hashlib.sha256(presented).hexdigest()
        entry = self._known.get(digest)
        if entry is None:
            entry = await self._ask(digest)
        if entry is None or (entry[1] is not None and entry[1] <= time.time_ns() // 1000):
            raise AuthenticationFailed("Incorrect API key provided.")
        return entry[0]

    async def _ask(self, digest: str) -> _Entry | None:
        """The database asked for a digest this replica does not know (at most once a second
        per digest, so a wrong key cannot hammer it)."""
        now = time.monotonic()
        if self._unknown.get(digest, 0.0) > now:
            return None
        query = select(keys_table).where(keys_table.c.digest == digest)
        async with self._engine.connect() as conn:
            row = (await conn.execute(query)).mappings().first()
        if row is None:
            if len(self._unknown) >= _UNKNOWN_MAX:
                self._unknown.clear()
            self._unknown[digest] = now + REFRESH
            return None
        entry = (client_key(row), row["expires_at"])
        self._known[digest] = entry
        return entry

    async def listed(self) -> list[dict[str, Any]]:
        query = select(keys_table).order_by(keys_table.c.created_at)
        async with self._engine.connect() as conn:
            return [view(row) for row in (await conn.execute(query)).mappings().all()]

    async def create(self, key: NewKey) -> dict[str, Any]:
        secret = new_secret()
        digest = hashlib.sha256(secret.encode()).hexdigest()
        expires = expires_us(key)
        row: dict[str, Any] = {
            "name": key.name,
            "digest": digest,
            "models": None if key.models is None else orjson.dumps(key.models).decode(),
            "limits": key.limits.model_dump_json(exclude_none=True),
            "budget": None if key.budget is None else key.budget.model_dump_json(),
            "team": key.team,
            "expires_at": expires,
            "created_at": time.time_ns() // 1000,
        }
        try:
            async with self._engine.begin() as conn:
                await conn.execute(keys_table.insert().values(**row))
        except IntegrityError:
            raise Conflict(f"The key name '{key.name}' is taken.", param="name") from None
        self._known[digest] = (client_key(row), expires)
        return {**view(row), "key": secret}

    async def revoke(self, name: str) -> bool:
        async with self._engine.begin() as conn:
            result = await conn.execute(keys_table.delete().where(keys_table.c.name == name))
        self._known = {d: e for d, e in self._known.items() if e[0].name != name}
        return bool(result.rowcount)
