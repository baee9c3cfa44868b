"""config.yaml's `server` section: client keys (named, hashed, with allow-lists and limits),
per-model limits, the store they are counted in, logs and traces (CONTRACT.md, "Running it
for a team")."""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.console.settings import DatabaseConfig, RequestLogConfig
from app.spend_config import MAX_BUDGET, SpendConfig, not_a_bool

_STRICT = ConfigDict(extra="forbid", frozen=True)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

DEFAULT_KEY_NAME = "default"
"""The name of every key given in `api_keys`, in logs and metrics."""


class Limits(BaseModel):
    """Requests and tokens (prompt + completion) per sliding 60 s, and requests at once."""

    model_config = _STRICT
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    concurrent: int | None = Field(default=None, ge=1)

    @property
    def any(self) -> bool:
        return self.rpm is not None or self.tpm is not None or self.concurrent is not None


NO_LIMITS = Limits()


class BudgetConfig(BaseModel):
    """At most `usd` (up to MAX_BUDGET) spent per UTC calendar `period` (a week starts on
    Monday), or in `total` (never reset)."""

    model_config = _STRICT
    usd: float = Field(ge=0, le=MAX_BUDGET, allow_inf_nan=False)
    period: Literal["day", "week", "month", "total"]

    @field_validator("usd", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        return not_a_bool(value)


class TeamConfig(BaseModel):
    model_config = _STRICT
    budget: BudgetConfig | None = None


class KeyConfig(BaseModel):
    """One member's key: `key` (usually `${VAR}`) or its `key_sha256`, so the file need hold
    no secret. `models` None means every model."""

    model_config = _STRICT
    name: str = Field(min_length=1)
    key: str | None = None
    key_sha256: str | None = None
    models: list[str] | None = None
    limits: Limits = NO_LIMITS
    mcp: list[str] | None = None
    """The MCP servers (labels) this key may use; None: every configured one."""
    team: str | None = Field(default=None, min_length=1)
    """A name in `server.teams`: the key's requests count against its team's budget too."""
    budget: BudgetConfig | None = None

    @model_validator(mode="after")
    def _one_secret(self) -> KeyConfig:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give `key` or `key_sha256`, one of them")
        if self.key is not None and not self.key:
            raise ValueError("key: empty (is its environment variable set?)")
        if self.key_sha256 is not None and not _SHA256.match(self.key_sha256.lower()):
            raise ValueError("key_sha256: not a SHA-256 hex digest (64 hex characters)")
        return self

    @property
    def digest(self) -> bytes:
        if self.key is not None:
            return hashlib.sha256(self.key.encode()).digest()
        assert self.key_sha256 is not None
        return bytes.fromhex(self.key_sha256)


class StoreConfig(BaseModel):
    """Where limits, cooldowns and thinking blocks are kept. `on_error` decides requests while
    a redis store cannot be reached: `open` serves them (unlimited, with a warning and a
    count), `closed` refuses them with 503. `timeout` bounds every store call, in seconds."""

    model_config = _STRICT
    kind: Literal["memory", "redis"] = "memory"
    url: str | None = None
    on_error: Literal["open", "closed"] = "open"
    timeout: float = Field(default=0.25, gt=0, le=10)
    prefix: str = "toolrelay:"

    @model_validator(mode="after")
    def _url_for_redis(self) -> StoreConfig:
        if self.kind == "redis" and not self.url:
            raise ValueError("url: required with kind: redis (e.g. redis://127.0.0.1:6379/0)")
        return self


class LogConfig(BaseModel):
    model_config = _STRICT
    format: Literal["json", "text"] = "text"
    level: Literal["debug", "info", "warning", "error"] = "info"


class TracingConfig(BaseModel):
    model_config = _STRICT
    otlp_endpoint: str | None = None
    service_name: str = "toolrelay"


class ResponsesConfig(BaseModel):
    """Stored responses (and Anthropic threads): how long each is kept, in seconds, and how
    many MiB the memory store holds before it drops the oldest (Redis is bounded by its own
    maxmemory)."""

    model_config = _STRICT
    ttl: int = Field(default=86400, ge=1)
    max_mb: int = Field(default=64, ge=1)


class ServerConfig(BaseModel):
    model_config = _STRICT
    api_keys: list[str] = Field(default_factory=list)
    keys: list[KeyConfig] = Field(default_factory=list)
    limits: dict[str, Limits] = Field(default_factory=dict)
    store: StoreConfig = Field(default_factory=StoreConfig)
    log: LogConfig = Field(default_factory=LogConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    responses: ResponsesConfig = Field(default_factory=ResponsesConfig)
    spend: SpendConfig = Field(default_factory=SpendConfig)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    budgets: dict[str, BudgetConfig] = Field(default_factory=dict)
    """Per configured model, across every key."""
    # On SIGTERM: in-flight requests (streams included) get this long to finish, then are closed.
    shutdown_grace: int = Field(default=30, ge=0)
    max_body_mb: float = Field(default=32, gt=0, allow_inf_nan=False)
    """The largest body the proxy reads from a client (chat, Responses, Messages, embeddings,
    token counts), in MiB: past it a 413, before the rest is read (CONTRACT.md, "Limits on
    what a client sends")."""
    passthrough: str | None = None
    """The openai-kind provider that other /v1/ paths without a `model` (files, batches,
    uploads...) are passed through to; unset, they are a 404 that names this setting."""
    admin_keys: list[str] = Field(default_factory=list)
    """Who may read /v1/logs, manage /v1/keys and open /ui (app/console/)."""
    database: DatabaseConfig | None = None
    request_log: RequestLogConfig = Field(default_factory=RequestLogConfig)
    console: bool = True

    @field_validator("max_body_mb", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object) -> object:
        """YAML's `yes`/`true` would otherwise pass as 1 MiB."""
        if isinstance(value, bool):
            raise ValueError("a number of MiB, not a boolean")
        return value

    @property
    def max_body_bytes(self) -> int:
        return max(1, int(self.max_body_mb * (1 << 20)))

    @model_validator(mode="after")
    def _unique_keys(self) -> ServerConfig:
        """Names and secrets are each given once: a request is identified by its secret, so
        one secret under two entries would be the first one's, the other's allow-list and
        limits silently ignored (a key moved from `api_keys` to `keys` and left in both)."""
        names: set[str] = set()
        digests = {hashlib.sha256(key.encode()).digest() for key in self.client_keys}
        for index, key in enumerate(self.keys):
            if key.name in names:
                raise ValueError(f"keys[{index}].name: '{key.name}' is used twice")
            if key.digest in digests:
                raise ValueError(
                    f"keys[{index}]: the same key is given twice (in `keys` or `api_keys`)"
                )
            names.add(key.name)
            digests.add(key.digest)
            if key.team is not None and key.team not in self.teams:
                configured = ", ".join(sorted(self.teams)) or "none"
                raise ValueError(
                    f"keys[{index}].team: unknown team '{key.team}' (server.teams: {configured})"
                )
        return self

    @property
    def has_budgets(self) -> bool:
        """Whether any budget is set (the hot path does no spend work otherwise)."""
        return bool(
            self.budgets
            or any(key.budget for key in self.keys)
            or any(team.budget for team in self.teams.values())
        )

    @property
    def client_keys(self) -> list[str]:
        """The `api_keys`, without the empty ones an unset `${VAR:-}` leaves behind."""
        return [key for key in self.api_keys if key]

    @property
    def admin_secrets(self) -> list[str]:
        """The `admin_keys`, without the empty ones an unset `${VAR:-}` leaves behind."""
        return [key for key in self.admin_keys if key]

    @property
    def console_secrets(self) -> list[str]:
        """The admin keys and the database's password, for redaction."""
        password = None if self.database is None else self.database.password
        return self.admin_secrets + ([password] if password else [])

    @property
    def auth_required(self) -> bool:
        return bool(self.client_keys or self.keys)
