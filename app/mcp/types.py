"""What the MCP clients hand the rest of the proxy: a listed tool, a call's result, which
server a request means, and the one failure type (a JSON-RPC error or a transport failure),
all plain values with no SDK type in them, so callers never import the SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

FailureKind = Literal["protocol", "http"]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One listed tool, as the server gave it (JSON Schemas as dicts)."""

    name: str
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class McpResult:
    """A `tools/call` result as it came: its content blocks as JSON dicts, its
    `structuredContent`, and whether the tool itself failed (`isError`)."""

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None
    is_error: bool


class McpFailure(Exception):
    """A server could not be listed or called. `kind` "protocol": it answered a JSON-RPC
    error (`code` its code); "http": the transport failed (`code` the HTTP status, None when
    no response came). `message` names the server and the failure, never a secret; `detail`
    is the failure alone."""

    def __init__(
        self, kind: FailureKind, code: int | None, message: str, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.code = code
        self.message = message
        self.detail = message if detail is None else detail
        """The failure without the server's name, for a caller that names it itself."""


@dataclass(frozen=True, slots=True)
class ServerRef:
    """Which server a request means: the configured `label` (url None), or a client-given
    `url` (already checked against `mcp.remote_urls` by the caller) under that label.
    `headers` are added to the configured ones, never replacing one."""

    label: str
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
