"""config.yaml's `mcp` section: the MCP servers by label (Streamable HTTP or a stdio command),
their allow-lists and approval defaults, the server URLs a client may name, and the round
limit of the hosted-tool loop (CONTRACT.md, "MCP: tools from MCP servers"). Pure pydantic, so
app/config.py can validate it without the MCP SDK."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.server_config import KeyConfig
from app.spend_config import not_a_bool

_STRICT = ConfigDict(extra="forbid", frozen=True)
_LABEL = re.compile(r"^[A-Za-z0-9_-]+$")

Approval = Literal["always", "never"]


class ToolNames(BaseModel):
    """`{tool_names: [...]}`, the shape OpenAI's `require_approval` filters take."""

    model_config = _STRICT
    tool_names: list[str] = Field(default_factory=list)


class ApprovalFilter(BaseModel):
    """`{always: {tool_names}, never: {tool_names}}`: per tool, whether a call waits for the
    client's approval; a tool named in neither takes the hosted tool's default."""

    model_config = _STRICT
    always: ToolNames | None = None
    never: ToolNames | None = None


class McpServerConfig(BaseModel):
    """One server: `url` (+ `headers`) for Streamable HTTP, or `command` (+ `env`) for a
    process the proxy starts and talks to over stdio; exactly one of the two.
    `require_approval` None means the config says nothing (the hosted tool's own default,
    "always", applies)."""

    model_config = _STRICT
    url: str | None = Field(default=None, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    allowed_tools: list[str] | None = None
    require_approval: Approval | ApprovalFilter | None = None
    cost_per_call: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """USD each tools/call costs (a paid search API behind the server): added to the cost of
    the request that made the call (CONTRACT.md, "Spend: prices, cost, budgets")."""

    _cost_not_a_bool = field_validator("cost_per_call", mode="before")(not_a_bool)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.url is None) == (self.command is None):
            raise ValueError("give `url` (Streamable HTTP) or `command` (stdio), one of them")
        if self.url is not None:
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url: an http:// or https:// URL")
            if self.env:
                raise ValueError("env: only a stdio server (`command`) has one")
        elif self.headers:
            raise ValueError("headers: only an HTTP server (`url`) has them")
        if self.command is not None and not self.command[0]:
            raise ValueError("command: the program is empty")
        return self

    def secrets(self) -> list[str]:
        """Header and environment values: what must never reach a log line or a client."""
        return [value for value in (*self.headers.values(), *self.env.values()) if value]


class McpConfig(BaseModel):
    model_config = _STRICT
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    remote_urls: list[str] = Field(default_factory=list)
    """Globs (fnmatch) of the `server_url` values a client may name; none by default, so a
    client cannot make the proxy call an address the config does not allow."""
    max_rounds: int = Field(default=16, ge=1)

    @field_validator("servers")
    @classmethod
    def _labels(cls, servers: dict[str, Any]) -> dict[str, Any]:
        """Labels become `LABEL__TOOL` on /mcp: a `__` inside one would make names ambiguous."""
        for label in servers:
            if not _LABEL.match(label):
                raise ValueError(f"'{label}': a label is letters, digits, '_' and '-' only")
            if "__" in label:
                raise ValueError(f"'{label}': a label may not contain '__'")
        return servers

    def secrets(self) -> list[str]:
        return [secret for server in self.servers.values() for secret in server.secrets()]


def check_key_servers(keys: Sequence[KeyConfig], mcp: McpConfig) -> None:
    """A key's `mcp` allow-list names configured servers: a typo would be a key that silently
    sees none."""
    for index, key in enumerate(keys):
        for label in key.mcp or ():
            if label not in mcp.servers:
                configured = ", ".join(sorted(mcp.servers)) or "none"
                raise ValueError(
                    f"server.keys[{index}].mcp: unknown MCP server '{label}'"
                    f" (configured: {configured})"
                )
