"""config.yaml: typed models (unknown keys rejected), `${VAR:-default}` interpolation, and
load errors that name the file and the offending key in one line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Kind = Literal["openai", "anthropic", "gemini", "demo"]

_STRICT = ConfigDict(extra="forbid", frozen=True)

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "demo": "http://demo.invalid/v1",
}


class ConfigError(Exception):
    """A config that cannot be used; its message is the one line the user sees."""


class ServerConfig(BaseModel):
    model_config = _STRICT
    api_keys: list[str] = Field(default_factory=list)

    @property
    def client_keys(self) -> list[str]:
        """Configured keys, without the empty ones an unset `${VAR:-}` leaves behind."""
        return [key for key in self.api_keys if key]


class ProviderConfig(BaseModel):
    model_config = _STRICT
    kind: Kind
    base_url: str = ""
    api_key: str | None = None
    timeout: float = Field(default=600.0, gt=0)
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _default_base_url(self) -> ProviderConfig:
        base_url = (self.base_url or DEFAULT_BASE_URLS[self.kind]).rstrip("/")
        object.__setattr__(self, "base_url", base_url)
        return self

    @property
    def key_missing(self) -> bool:
        """A key was configured (`api_key: ${X}`) but came out empty: X is unset."""
        return self.api_key is not None and not self.api_key


class ModelConfig(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    provider: str
    model: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, gt=0)


class Config(BaseModel):
    model_config = _STRICT
    server: ServerConfig = Field(default_factory=ServerConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    models: list[ModelConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_references(self) -> Config:
        seen: set[str] = set()
        for position, model in enumerate(self.models):
            if model.provider not in self.providers:
                raise ValueError(
                    f"models[{position}].provider: unknown provider '{model.provider}'"
                    f" (configured: {', '.join(sorted(self.providers)) or 'none'})"
                )
            if model.name in seen:
                raise ValueError(f"models[{position}].name: '{model.name}' is listed twice")
            seen.add(model.name)
        return self

    def secrets(self) -> list[str]:
        """Every configured secret, for redaction."""
        keys = [p.api_key for p in self.providers.values() if p.api_key]
        return keys + self.server.client_keys


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value: Any, environ: dict[str, str] | os._Environ[str]) -> Any:
    """`${VAR}` and `${VAR:-default}` in every string, recursively. An unset `${VAR}` becomes
    "" so a provider with a missing key still loads (and answers 401) instead of failing."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), value)
    if isinstance(value, dict):
        return {key: interpolate(item, environ) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environ) for item in value]
    return value


def parse_config(raw: Any, source: str, environ: dict[str, str] | None = None) -> Config:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        return Config.model_validate(interpolate(raw, os.environ if environ is None else environ))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


def load_config(path: str | Path, environ: dict[str, str] | None = None) -> Config:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from None
    return parse_config(raw, source, environ)


def _describe(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    key = ""
    for part in error["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{key}: {message}" if key else message
