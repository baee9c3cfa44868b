"""What one request did, filled in as it goes and logged once when it ends (by
app/api/middleware.py): never a key or a message body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RequestRecord:
    request_id: str
    method: str
    path: str
    status: int = 0
    model: str | None = None

    def log_line(self, elapsed_ms: float) -> str:
        fields = [self.request_id, self.method, self.path, str(self.status), f"{elapsed_ms:.1f}ms"]
        if self.model is not None:
            fields.append(f"model={self.model}")
        return " ".join(fields)
