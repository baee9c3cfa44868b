"""What one request did, filled in as it goes and read once when it ends (by
app/api/middleware.py) for its log line, metrics, limits and trace: never a key or a message
body."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.errors import ProxyError
from app.ops.admission import Lease
from app.ops.keys import ANONYMOUS, ClientKey
from app.ops.tracing import RequestSpan
from app.ops.usage import token_counts


@dataclass(slots=True)
class RequestRecord:
    request_id: str
    method: str
    path: str
    status: int = 0
    key: ClientKey = ANONYMOUS
    model: str | None = None  # the configured model last tried: the one that answered, if any
    provider: str | None = None  # the provider of the last attempt
    deployment: str | None = None
    attempts: list[str] = field(default_factory=list)  # "deployment=status", in order
    stream: bool = False
    """Whether the client asked for a stream (set as the request is dispatched): a stream
    that failed before its first token is still one."""
    first_token_ms: float | None = None
    stream_error: int | None = None  # the status of an error event that ended a stream
    error: tuple[str | None, str | None] | None = None
    """(code, param) of the error the client was sent, if any: enough to diagnose a refusal
    from the log, while the message (which may quote the user's content) is never kept."""
    usage: Any = None
    cost_usd: float | None = None
    """What every attempt's answers cost, in USD (retries, fallbacks and the MCP loop's rounds
    included): None while no answer was priced, so an unpriced model never logs a 0 that
    looks like a cost."""
    upstream_wait: float = 0.0
    """Seconds spent waiting on upstreams (calls, first tokens, backoffs) before the answer's
    headers: what the proxy's overhead leaves out. Added to only by `waited_since`, so it is
    measured on the same clock as the request itself."""
    overhead_ms: float | None = None
    lease: Lease | None = None
    span: RequestSpan | None = None
    audit: Any = None
    """The tool-call audit of the answer the client received (app/toolcalls/audit.py)."""
    capture: Any = None
    """What the console keeps of the request for its row (app/console/capture.py); None: no
    row (no database, a path without rows, or a key that was refused)."""
    clock: Callable[[], float] = time.perf_counter
    """The one clock every duration of the request is read from. The overhead is the request's
    time less the waits within it: with one monotonic clock that cannot go below zero, while
    a wait read from another clock (uvloop's `loop.time()` is whole milliseconds of a coarse
    clock) can exceed the request's own time and did (`overhead_ms=-0.52`)."""
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def waited_since(self, since: float) -> None:
        """Counts the time from `since` (a reading of `clock`) to now as upstream wait."""
        self.upstream_wait += self.clock() - since

    def elapsed(self) -> float:
        """Seconds since the request arrived."""
        return self.clock() - self.started

    def headers_sent(self) -> float:
        """The proxy's own time up to the answer's headers, in ms (kept in `overhead_ms`)."""
        self.overhead_ms = (self.elapsed() - self.upstream_wait) * 1000
        return self.overhead_ms

    def tried(self, deployment: str, status: int) -> None:
        self.attempts.append(f"{deployment}={status}")
        self.deployment = deployment

    def answered(self, deployment: str, usage: Any) -> None:
        self.tried(deployment, 200)
        self.usage = usage

    def stream_ended(self, deployment: str, error: ProxyError | None, usage: Any) -> None:
        self.answered(deployment, usage)
        if error is not None:
            self.stream_error = error.status
            self.failed(error)

    def add_cost(self, value: float | None) -> None:
        """Adds one answer's (or one MCP call's) cost; None (unpriced) adds nothing."""
        if value is not None:
            self.cost_usd = value if self.cost_usd is None else self.cost_usd + value

    def failed(self, error: ProxyError) -> None:
        """Keeps the code and param of the error rendered to the client (the last one wins)."""
        self.error = (_loggable(error.code), _loggable(error.param))

    def tokens(self) -> tuple[int, int] | None:
        """(prompt, completion) tokens of the answer, if the upstream reported them."""
        return token_counts(self.usage)

    def fields(self, duration_ms: float) -> dict[str, Any]:
        """The log line's fields (CONTRACT.md: request_id, key, model, provider, deployment,
        status, duration_ms, ttft_ms, prompt_tokens, completion_tokens, attempts, cost_usd), plus
        `error_code` and `error_param` only when an error was sent."""
        tokens = self.tokens()
        fields: dict[str, Any] = {
            "request_id": self.request_id,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "key": self.key.name,
            "model": self.model,
            "provider": self.provider,
            "deployment": self.deployment,
            "duration_ms": round(duration_ms, 1),
            "ttft_ms": None if self.first_token_ms is None else round(self.first_token_ms, 1),
            "overhead_ms": None if self.overhead_ms is None else round(self.overhead_ms, 2),
            "prompt_tokens": None if tokens is None else tokens[0],
            "completion_tokens": None if tokens is None else tokens[1],
            "attempts": len(self.attempts),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 10),
        }
        if len(self.attempts) > 1:
            fields["tried"] = self.attempts
        if self.stream_error is not None:
            fields["stream_error"] = self.stream_error
        if self.error is not None:
            fields["error_code"], fields["error_param"] = self.error
        return fields


_LOGGABLE_CHARS = 120
"""An upstream's `code` or `param` is passed on as it came: capped so a hostile one cannot
flood the log."""


def _loggable(value: object) -> str | None:
    """`value` as one short token for a `key=value` line: whitespace and control characters
    (which would split or forge a text line) replaced, length capped."""
    if value is None:
        return None
    text = "".join("_" if ch.isspace() or not ch.isprintable() else ch for ch in str(value))
    return text[:_LOGGABLE_CHARS]
