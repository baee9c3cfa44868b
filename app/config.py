"""config.yaml: typed models (unknown keys rejected), `${VAR:-default}` interpolation, and
load errors that name the file and the offending key in one line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.mcp.settings import McpConfig, check_key_servers
from app.server_config import ServerConfig
from app.spend_config import CONFIG_FOLDER, MAX_TOKENS, PriceConfig

Kind = Literal["openai", "anthropic", "gemini", "bedrock", "vertex", "azure", "demo"]

_STRICT = ConfigDict(extra="forbid", frozen=True)

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "demo": "http://demo.invalid/v1",
}


class ConfigError(Exception):
    """A config that cannot be used; its message is the one line the user sees."""


class TimeoutsConfig(BaseModel):
    """Seconds; a field left out takes the provider's value, then the default.

    connect: to open a connection. first_token: from sending the request to the first byte
    of the answer (non-stream: the whole answer's headers; stream: the first chunk the client
    would get). idle: the longest gap between two reads of a stream. total: the whole attempt,
    stream included. Each ends in a 504 (an error event once a stream has begun); connect and
    first_token failures are retried like any retryable failure."""

    model_config = _STRICT
    connect: float | None = Field(default=None, gt=0)
    first_token: float | None = Field(default=None, gt=0)
    idle: float | None = Field(default=None, gt=0)
    total: float | None = Field(default=None, gt=0)


DEFAULT_TIMEOUTS = TimeoutsConfig(connect=10, first_token=600, idle=300, total=600)


class ProviderConfig(BaseModel):
    model_config = _STRICT
    kind: Kind
    base_url: str = ""
    api_key: str | None = None
    timeout: float | None = Field(default=None, gt=0)  # = timeouts.total
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    headers: dict[str, str] = Field(default_factory=dict)
    responses: Literal["translate", "native"] = "translate"
    """`native`: the upstream serves /v1/responses itself, and Responses API clients are
    relayed to it as they came (openai kind only)."""
    api_version: str | None = Field(default=None, min_length=1)
    """Azure OpenAI: the deployments API's `api-version`; without it, the v1 API."""
    project: str | None = Field(default=None, min_length=1)
    """Vertex AI: the Google Cloud project."""
    region: str | None = Field(default=None, min_length=1)
    """Bedrock: the AWS region (`us-east-1`...); Vertex AI: the location (`us-east5`,
    `europe-west1`, `global`...)."""
    credentials: str | None = None
    """Vertex AI: a service-account key file; empty or unset, Google's application default
    credentials."""
    betas: list[str] | None = None
    """Bedrock and Vertex AI: the `anthropic-beta` values Claude there takes, replacing the
    kind's documented list; the others a client sends are left out, with a warning."""

    @model_validator(mode="after")
    def _defaults(self) -> ProviderConfig:
        if self.responses == "native" and self.kind != "openai":
            raise ValueError("responses: native needs kind: openai")
        self._check_cloud_fields()
        if self.kind == "bedrock" and not self.api_key:
            # `${AWS_BEARER_TOKEN_BEDROCK:-}` left empty: no Bedrock API key, so SigV4 signs.
            object.__setattr__(self, "api_key", None)
        base_url = (self.base_url or self._default_base_url()).rstrip("/")
        object.__setattr__(self, "base_url", base_url)
        if self.timeout is not None:
            if self.timeouts.total is not None:
                raise ValueError("timeout: give `timeout` or `timeouts.total`, not both")
            timeouts = self.timeouts.model_copy(update={"total": self.timeout})
            object.__setattr__(self, "timeouts", timeouts)
        return self

    def _check_cloud_fields(self) -> None:
        if self.api_version is not None and self.kind != "azure":
            raise ValueError("api_version: only kind azure has one")
        if self.kind == "vertex" and (self.project is None or self.region is None):
            raise ValueError("kind vertex needs `project` and `region`")
        if self.kind == "bedrock" and self.region is None:
            raise ValueError("kind bedrock needs `region` (requests are signed for it)")
        if self.kind != "vertex" and (self.project is not None or self.credentials is not None):
            raise ValueError("project and credentials: only kind vertex has them")
        if self.kind not in ("vertex", "bedrock") and self.region is not None:
            raise ValueError("region: only kinds bedrock and vertex have one")
        if self.kind not in ("vertex", "bedrock") and self.betas is not None:
            raise ValueError("betas: only kinds bedrock and vertex have them")
        if self.kind == "azure" and not self.base_url:
            raise ValueError("base_url: kind azure has no default; give the resource's endpoint")

    def _default_base_url(self) -> str:
        if self.kind == "vertex":
            host = "aiplatform.googleapis.com"
            return f"https://{host}" if self.region == "global" else f"https://{self.region}-{host}"
        if self.kind == "bedrock":
            return f"https://bedrock-runtime.{self.region}.amazonaws.com"
        return DEFAULT_BASE_URLS[self.kind]

    @property
    def key_missing(self) -> bool:
        """A key was configured (`api_key: ${X}`) but came out empty: X is unset."""
        return self.api_key is not None and not self.api_key


class DeploymentConfig(BaseModel):
    """One provider + upstream model serving a configured model name."""

    model_config = _STRICT
    provider: str
    model: str = Field(min_length=1)
    weight: int = Field(default=1, ge=1)
    price: PriceConfig | None = None
    """This deployment's own price (its provider and upstream id may cost other than its
    model's siblings); None: the model's `price`, else the price file's."""


Strategy = Literal["weighted", "least-busy"]

RecoverMode = Literal[
    "off", "auto", "hermes", "qwen_xml", "mistral", "llama", "pythonic", "deepseek", "kimi", "json"
]
OnInvalid = Literal["pass", "error", "retry", "fallback"]


class ToolCallsConfig(BaseModel):
    """Per model: whether tool calls written as text are recovered, what a call that breaks
    its tool's schema gets (CONTRACT.md, "Tool-call quality"), and how low a deployment's
    share of valid calls may fall before it is cooled down ("Routing by tool-call quality")."""

    model_config = _STRICT
    recover: RecoverMode = "off"
    on_invalid: OnInvalid = "pass"
    retries: int = Field(default=1, ge=0, le=5)
    min_valid_rate: float | None = Field(default=None, ge=0, le=1)
    """A deployment whose calls validate less often than this (over its last `window` audited
    calls, at least 10 judged) is cooled down (CONTRACT.md, "Routing by tool-call quality")."""
    window: int = Field(default=50, ge=10)


Effort = Literal["minimal", "low", "medium", "high"]
GeminiThinking = Literal["budget", "level"]
PromptCache = Literal["auto", "off"]
StructuredOutput = Literal["native", "tool"]
"""How an anthropic upstream gives `response_format` JSON: Anthropic's `output_config.format`
(`native`), or a forced tool whose input becomes the answer (`tool`), for models or gateways
that lack the native field (PROTOCOLS B.6)."""


class ReasoningBudgets(BaseModel):
    """Thinking tokens per `reasoning_effort`, for upstreams that take a budget (Anthropic,
    Gemini 2.5). `minimal` unset is the smallest budget the upstream allows."""

    model_config = _STRICT
    minimal: int | None = Field(default=None, ge=0)
    low: int = Field(default=1024, ge=0)
    medium: int = Field(default=4096, ge=0)
    high: int = Field(default=16384, ge=0)


class ReasoningConfig(BaseModel):
    """Per model: how `reasoning_effort` becomes the upstream's thinking settings (CONTRACT.md,
    "Reasoning"). `gemini` overrides the model-id table that picks a budget (2.5) or a level
    (3 and later)."""

    model_config = _STRICT
    budgets: ReasoningBudgets = Field(default_factory=ReasoningBudgets)
    gemini: GeminiThinking | None = None


class ModelConfig(BaseModel):
    """A model name clients ask for: one deployment (`provider` + `model`) or several
    (`deployments`), the models to fall back to, and per-model timeouts."""

    model_config = _STRICT
    name: str = Field(min_length=1)
    provider: str | None = None
    model: str | None = Field(default=None, min_length=1)
    weight: int = Field(default=1, ge=1)
    deployments: list[DeploymentConfig] | None = Field(default=None, min_length=1)
    strategy: Strategy = "weighted"
    fallbacks: list[str] = Field(default_factory=list)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    max_output_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    """The most this model may generate: a larger `max_tokens` from the Messages API face
    (Claude Code asks for 32000) is lowered to it."""
    tool_calls: ToolCallsConfig = Field(default_factory=ToolCallsConfig)
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig)
    structured_output: StructuredOutput = "native"
    prompt_cache: PromptCache = "auto"  # CONTRACT.md, "Prompt caching"
    price: PriceConfig | None = None
    """USD per million tokens, for every deployment that has no `price` of its own."""

    @model_validator(mode="after")
    def _one_form(self) -> ModelConfig:
        if self.deployments is None:
            if self.provider is None or self.model is None:
                raise ValueError("give `provider` and `model`, or `deployments`")
        elif self.provider is not None or self.model is not None:
            raise ValueError("give `provider` and `model`, or `deployments`, not both")
        return self

    def all_deployments(self) -> list[DeploymentConfig]:
        if self.deployments is not None:
            if self.price is None:
                return self.deployments
            return [
                deployment
                if deployment.price is not None
                else deployment.model_copy(update={"price": self.price})
                for deployment in self.deployments
            ]
        assert self.provider is not None
        assert self.model is not None
        return [
            DeploymentConfig(
                provider=self.provider, model=self.model, weight=self.weight, price=self.price
            )
        ]


class CooldownConfig(BaseModel):
    model_config = _STRICT
    failures: int = Field(default=3, ge=1)  # retryable failures within `window` seconds...
    window: float = Field(default=60.0, gt=0)
    seconds: float = Field(default=30.0, ge=0)  # ...skip the deployment this long


class RouterConfig(BaseModel):
    """How hard one request tries before the client gets an error."""

    model_config = _STRICT
    retries: int = Field(default=2, ge=0)  # extra attempts per model after the first
    backoff: float = Field(default=0.5, ge=0)  # before the first retry; doubled, jittered
    max_backoff: float = Field(default=8.0, ge=0)
    deadline: float = Field(default=120.0, gt=0)  # no new attempt starts after this
    cooldown: CooldownConfig = Field(default_factory=CooldownConfig)


class Config(BaseModel):
    model_config = _STRICT
    server: ServerConfig = Field(default_factory=ServerConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    models: list[ModelConfig] = Field(default_factory=list)
    mcp: McpConfig = Field(default_factory=McpConfig)

    @model_validator(mode="after")
    def _check_references(self) -> Config:
        configured = ", ".join(sorted(self.providers)) or "none"
        for position, model in enumerate(self.models):
            where = f"models[{position}]"
            for index, deployment in enumerate(model.all_deployments()):
                if deployment.provider not in self.providers:
                    key = "provider" if model.deployments is None else f"deployments[{index}]"
                    raise ValueError(
                        f"{where}.{key}: unknown provider '{deployment.provider}'"
                        f" (configured: {configured})"
                    )
        names = {model.name for model in self.models}
        for position, model in enumerate(self.models):
            for fallback in model.fallbacks:
                if fallback not in names:
                    raise ValueError(f"models[{position}].fallbacks: unknown model '{fallback}'")
        self._check_fallback_cycles()
        self._check_model_names(names)
        self._check_passthrough()
        check_key_servers(self.server.keys, self.mcp)
        return self

    def _check_passthrough(self) -> None:
        """`server.passthrough` names a configured openai-kind provider: only those serve the
        rest of OpenAI's API as OpenAI does."""
        name = self.server.passthrough
        if name is None:
            return
        provider = self.providers.get(name)
        if provider is None:
            configured = ", ".join(sorted(self.providers)) or "none"
            raise ValueError(
                f"server.passthrough: unknown provider '{name}' (configured: {configured})"
            )
        if provider.kind != "openai":
            raise ValueError(
                f"server.passthrough: the provider '{name}' is of kind {provider.kind}; "
                "only an openai-kind provider can serve passed-through requests"
            )

    def _check_model_names(self, names: set[str]) -> None:
        """Model names in `server.limits`, `server.budgets` and keys' allow-lists must be
        configured ones, or `PROVIDER/MODEL` / `PROVIDER/*` with a configured provider: a typo
        would otherwise be a limit or budget that never applies or a key that can use
        nothing."""
        for section, named in (("limits", self.server.limits), ("budgets", self.server.budgets)):
            for name in named:
                if name not in names:
                    raise ValueError(f"server.{section}: unknown model '{name}'")
        for index, key in enumerate(self.server.keys):
            for name in key.models or ():
                provider, slash, _ = name.partition("/")
                if name not in names and not (slash and provider in self.providers):
                    raise ValueError(f"server.keys[{index}].models: unknown model '{name}'")

    def _check_fallback_cycles(self) -> None:
        """A model must not fall back to itself, however indirectly: the chain would loop."""
        fallbacks: dict[str, list[str]] = {}
        for model in self.models:
            fallbacks.setdefault(model.name, []).extend(model.fallbacks)
        for start, direct in fallbacks.items():
            stack, seen = list(direct), set()
            while stack:
                name = stack.pop()
                if name == start:
                    raise ValueError(f"models: '{start}' falls back to itself (via fallbacks)")
                if name not in seen:
                    seen.add(name)
                    stack.extend(fallbacks.get(name, ()))

    def merged_models(self) -> dict[str, MergedModel]:
        """Models by name; a name listed several times serves all its entries' deployments,
        with the first entry's other settings."""
        merged: dict[str, MergedModel] = {}
        for model in self.models:
            entry = merged.get(model.name)
            if entry is None:
                merged[model.name] = MergedModel(model, list(model.all_deployments()))
            else:
                entry.deployments.extend(model.all_deployments())
        return merged

    def secrets(self) -> list[str]:
        """Every configured secret, for redaction."""
        keys = [p.api_key for p in self.providers.values() if p.api_key]
        named = [key.key for key in self.server.keys if key.key]
        return (
            keys
            + self.server.client_keys
            + named
            + self.mcp.secrets()
            + self.server.console_secrets
        )


@dataclass(slots=True)
class MergedModel:
    settings: ModelConfig
    deployments: list[DeploymentConfig]


def effective_timeouts(provider: ProviderConfig, model: ModelConfig | None) -> TimeoutsConfig:
    """Per field: the model's, else the provider's, else the default."""
    layers = [model.timeouts if model else None, provider.timeouts, DEFAULT_TIMEOUTS]
    values = {
        name: next(getattr(layer, name) for layer in layers if layer and getattr(layer, name))
        for name in ("connect", "first_token", "idle", "total")
    }
    return TimeoutsConfig(**values)


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


def parse_config(
    raw: Any, source: str, environ: dict[str, str] | None = None, folder: str = ""
) -> Config:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        values = interpolate(raw, os.environ if environ is None else environ)
        return Config.model_validate(values, context={CONFIG_FOLDER: folder})
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
    return parse_config(raw, source, environ, str(Path(path).absolute().parent))


def _describe(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    key = ""
    for part in error["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{key}: {message}" if key else message
