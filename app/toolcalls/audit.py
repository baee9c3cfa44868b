"""The tool calls of one answer, each with where it came from (a structured call, or one
recovered from text) and its verdict against the offered tool: what the response header, the
metrics, the on_invalid policy and `eval` all read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from app.toolcalls.validation import Verdict

Source = Literal["structured", "recovered"]

# The header lists classes in this order (CONTRACT.md: `ok=2 schema_mismatch=1`).
RESULTS = ("ok", "invalid_json", "unknown_name", "schema_mismatch")


@dataclass(frozen=True, slots=True)
class AuditedCall:
    name: str
    arguments: str
    source: Source
    verdict: Verdict


@dataclass(slots=True)
class ToolCallAudit:
    calls: list[AuditedCall] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(call.verdict.result for call in self.calls)

    def header(self) -> str:
        """`x-toolrelay-tool-calls`: space-separated `class=count`, zero counts left out."""
        counts = self.counts()
        return " ".join(f"{result}={counts[result]}" for result in RESULTS if counts[result])

    @property
    def invalid(self) -> list[AuditedCall]:
        return [call for call in self.calls if call.verdict.result != "ok"]

    def problems(self) -> str:
        """What was wrong with each invalid call, one sentence each: sent to the client with
        on_invalid `error`, and to the model with `retry`."""
        return " ".join(call.verdict.message for call in self.invalid)
