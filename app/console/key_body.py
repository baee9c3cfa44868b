"""POST /v1/keys' body, checked (pure: no database): each problem a 400 naming its field."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.console.filters import iso, to_micros
from app.errors import InvalidRequest
from app.server_config import BudgetConfig, Limits


class NewKey(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")
    models: list[str] | None = Field(default=None, max_length=1000)
    limits: Limits = Limits()
    budget: BudgetConfig | None = None
    team: str | None = Field(default=None, min_length=1, max_length=200)
    expires_at: datetime | None = None

    @field_validator("expires_at", mode="before")
    @classmethod
    def _a_string(cls, value: object) -> object:
        if value is not None and not isinstance(value, str):
            raise ValueError("an ISO 8601 time")
        return value


def parse_new_key(body: Any, models: set[str], providers: set[str]) -> NewKey:
    if not isinstance(body, dict):
        raise InvalidRequest("The body must be a JSON object.")
    try:
        key = NewKey.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or None
        raise InvalidRequest(f"{where}: {error['msg']}", param=where) from None
    for name in key.models or ():
        provider, slash, _ = name.partition("/")
        if name not in models and not (slash and provider in providers):
            raise InvalidRequest(f"models: unknown model '{name}'", param="models")
    expires = expires_us(key)
    if expires is not None and expires <= time.time_ns() // 1000:
        raise InvalidRequest("expires_at: in the past", param="expires_at")
    return key


def expires_us(key: NewKey) -> int | None:
    if key.expires_at is None:
        return None
    moment = key.expires_at
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return to_micros(moment)


def key_view(  # noqa: PLR0913
    name: str,
    *,
    models: list[str] | None,
    limits: dict[str, Any],
    budget: dict[str, Any] | None,
    team: str | None,
    expires_at: int | None,
    created_at: int | None,
    source: str,
) -> dict[str, Any]:
    """A key as /v1/keys shows it: never its secret."""
    view: dict[str, Any] = {
        "name": name,
        "models": models,
        "limits": limits,
        "budget": budget,
        "team": team,
        "expires_at": None if expires_at is None else iso(expires_at),
        "created_at": None if created_at is None else iso(created_at),
        "source": source,
    }
    if expires_at is not None:
        view["expired"] = expires_at <= time.time_ns() // 1000
    return view
