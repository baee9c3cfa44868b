"""The fields CONTRACT.md ("Running it for a team") promises on every request's log line."""

from __future__ import annotations

LOG_FIELDS = frozenset(
    {
        "request_id",
        "key",
        "model",
        "provider",
        "deployment",
        "status",
        "duration_ms",
        "ttft_ms",
        "prompt_tokens",
        "completion_tokens",
        "attempts",
    }
)

ERROR_FIELDS = frozenset({"error_code", "error_param"})
"""Present on the line only when the answer was an error (issue 20 part 4): its OpenAI `code`
and `param`, never its message."""
