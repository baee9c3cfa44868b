"""Who is asking: the configured client keys, matched in constant time by their SHA-256 digest
(so config files may hold digests instead of secrets), each with a name for logs and metrics,
an allow-list of models and its limits."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from app.errors import AuthenticationFailed, ModelNotAllowed
from app.ops.limits import Rule
from app.server_config import DEFAULT_KEY_NAME, NO_LIMITS, BudgetConfig, Limits, ServerConfig


@dataclass(frozen=True, slots=True)
class ClientKey:
    """`models` None: every model. `providers`: those named as `PROVIDER/*` in the list, whose
    every `PROVIDER/MODEL` is allowed. `rule`: its limits as the limiter counts them, None
    when it has none."""

    name: str
    models: frozenset[str] | None = None
    providers: frozenset[str] = frozenset()
    limits: Limits = NO_LIMITS
    scope: str = field(default="", compare=False)
    """What the key's stored responses are kept under: its name, or for each `api_keys`
    entry (all named `default`) a digest of its own, so no entry sees another's."""
    mcp: frozenset[str] | None = None
    """The MCP servers (labels) it may use; None: every configured one."""
    team: str | None = None
    budget: BudgetConfig | None = None
    rule: Rule | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not self.scope:
            object.__setattr__(self, "scope", self.name)
        rule = Rule(f"key:{self.name}", self.limits) if self.limits.any else None
        object.__setattr__(self, "rule", rule)

    def may_use(self, model: str) -> bool:
        if self.models is None or model in self.models:
            return True
        provider, slash, _ = model.partition("/")
        return bool(slash) and provider in self.providers

    def may_use_server(self, label: str) -> bool:
        return self.mcp is None or label in self.mcp

    def check(self, model: str) -> None:
        if not self.may_use(model):
            raise ModelNotAllowed(
                f"The key '{self.name}' may not use the model '{model}'.", param="model"
            )


ANONYMOUS = ClientKey("anonymous")
"""Every request's key when the proxy asks for none."""


class KeyRing:
    """The keys a request may present. `required` is False when none is configured."""

    __slots__ = ("_keys", "named", "required")

    def __init__(self, server: ServerConfig) -> None:
        keys = []
        for key in server.client_keys:
            digest = hashlib.sha256(key.encode()).digest()
            scope = f"{DEFAULT_KEY_NAME}.{digest[:12].hex()}"
            keys.append((digest, ClientKey(DEFAULT_KEY_NAME, scope=scope)))
        for config in server.keys:
            models, providers = None, frozenset[str]()
            if config.models is not None:
                models = frozenset(config.models)
                providers = frozenset(m[:-2] for m in config.models if m.endswith("/*"))
            mcp = None if config.mcp is None else frozenset(config.mcp)
            client_key = ClientKey(
                config.name,
                models,
                providers,
                config.limits,
                mcp=mcp,
                team=config.team,
                budget=config.budget,
            )
            keys.append((config.digest, client_key))
        self._keys = keys
        self.required = bool(keys)
        distinct = {client_key.name: client_key for _, client_key in keys}
        self.named: list[ClientKey] = list(distinct.values()) or [ANONYMOUS]
        """One ClientKey per name (`default` for every `api_keys` entry)."""

    def identify(self, presented: bytes) -> ClientKey:
        """The key whose digest matches. Every digest is compared, whether or not an earlier
        one matched, so timing tells neither which key nor how much of one was right."""
        digest = hashlib.sha256(presented).digest()
        found: ClientKey | None = None
        for candidate, client_key in self._keys:
            if hmac.compare_digest(digest, candidate) and found is None:
                found = client_key
        if found is None:
            raise AuthenticationFailed("Incorrect API key provided.")
        return found
