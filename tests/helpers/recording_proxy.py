"""A recording reverse proxy on 127.0.0.1 (what users put in front of ToolRelay for a bug
report): every request is recorded as a MockUpstream Exchange, forwarded as it came to the
target, and the target's answer (JSON, or an event stream as one raw frame) played back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.helpers.mock_upstream import Exchange, Frame, MockUpstream, Reply

_HOP = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


@dataclass
class Answered:
    """One forwarded request and the target's answer to it."""

    exchange: Exchange
    status: int
    body: Any = field(default=None)


class RecordingProxy(MockUpstream):
    def __init__(self, target: str) -> None:
        super().__init__(screen=self._forward)
        self.target = target.rstrip("/")
        self.answered: list[Answered] = []

    def _forward(self, exchange: Exchange) -> Reply:
        headers = {k: v for k, v in exchange.headers.items() if k not in _HOP}
        body = exchange.body
        content = body if isinstance(body, bytes) else None
        payload = None if body is None or content is not None else body
        # Blocking on the mock's loop serializes requests: enough for one client's session.
        answer = httpx.request(
            exchange.method,
            self.target + exchange.path,
            headers=headers,
            content=content,
            json=payload,
            timeout=60,
        )
        kept = {"content-type": answer.headers.get("content-type", "application/json")}
        if kept["content-type"].startswith("text/event-stream"):
            self.answered.append(Answered(exchange, answer.status_code))
            return Reply(answer.status_code, frames=[Frame(answer.content)], headers=kept)
        parsed = answer.json() if answer.content else None
        self.answered.append(Answered(exchange, answer.status_code, parsed))
        return Reply(answer.status_code, json=parsed)
