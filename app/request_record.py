"""What one request did, filled in as it goes and logged once when it ends (by
app/api/middleware.py) as `key=value` pairs: never a key or a message body."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import ProxyError


@dataclass(slots=True)
class RequestRecord:
    request_id: str
    method: str
    path: str
    status: int = 0
    model: str | None = None  # the configured model asked for
    attempts: list[str] = field(default_factory=list)  # "deployment=status", in order
    first_token_ms: float | None = None
    stream_error: int | None = None  # the status of an error event that ended a stream
    usage: Any = None

    def tried(self, deployment: str, status: int) -> None:
        self.attempts.append(f"{deployment}={status}")

    def answered(self, deployment: str, usage: Any) -> None:
        self.attempts.append(f"{deployment}=200")
        self.usage = usage

    def stream_ended(self, deployment: str, error: ProxyError | None, usage: Any) -> None:
        self.answered(deployment, usage)
        if error is not None:
            self.stream_error = error.status

    def log_line(self, elapsed_ms: float) -> str:
        fields = [self.request_id, self.method, self.path, str(self.status), f"{elapsed_ms:.1f}ms"]
        if self.model is not None:
            fields.append(f"model={self.model}")
        if self.attempts:
            fields.append(f"attempts={len(self.attempts)}")
            fields.append(f"deployments={','.join(self.attempts)}")
        if self.first_token_ms is not None:
            fields.append(f"ttft={self.first_token_ms:.1f}ms")
        if self.stream_error is not None:
            fields.append(f"stream_error={self.stream_error}")
        if isinstance(self.usage, dict):
            for name in ("prompt_tokens", "completion_tokens"):
                if isinstance(self.usage.get(name), int):
                    fields.append(f"{name}={self.usage[name]}")
        return " ".join(fields)
