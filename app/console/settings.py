"""config.yaml's console settings: `server.admin_keys`, `server.database`, `server.request_log`
and `server.console`. Kept free of SQLAlchemy so a plain config never loads it."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

_STRICT = ConfigDict(extra="forbid", frozen=True)

SCHEMES = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
"""The URL schemes a user writes, and the async driver each one runs on."""


class DatabaseConfig(BaseModel):
    """`sqlite:///./toolrelay.db` for one process, `postgresql://USER:PASS@HOST/DB` for
    several replicas sharing one log and one set of keys."""

    model_config = _STRICT
    url: str = Field(min_length=1)

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        scheme, sep, _ = url.partition("://")
        if not sep or scheme.lower() not in SCHEMES:
            raise ValueError("a sqlite:///PATH or postgresql://USER:PASS@HOST/DB URL")
        return url

    @property
    def password(self) -> str | None:
        return urlsplit(self.url).password

    @property
    def driver_url(self) -> str:
        """The URL with its async driver named (what SQLAlchemy's engine takes)."""
        scheme, _, rest = self.url.partition("://")
        return f"{SCHEMES[scheme.lower()]}://{rest}"


class RequestLogConfig(BaseModel):
    """`full`: rows with the request and the answer; `metadata`: rows without message content;
    `off`: no rows. Rows older than `retention_days` are deleted in the background."""

    model_config = _STRICT
    bodies: Literal["full", "metadata", "off"] = "full"
    retention_days: float = Field(default=7, gt=0, le=36500, allow_inf_nan=False)

    @field_validator("retention_days", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("a number of days, not a boolean")
        return value
