"""A finished request as a row of the log, built in the writer from the RequestRecord the
request path handed over (app/request_record.py), the tool-call audit it holds and the bytes
its Capture kept. Stored bodies leave out what could authenticate anyone: thinking
`signature`s and `encrypted_content` (headers and keys never reach a Capture)."""

from __future__ import annotations

import random
from typing import Any

import orjson

from app.console.assemble import assemble
from app.console.capture import Capture
from app.request_record import RequestRecord
from app.spend.prices import usage_counts
from app.toolcalls.audit import ToolCallAudit

SECRET_FIELDS = frozenset({"signature", "encrypted_content"})


def tool_calls(audit: ToolCallAudit | None) -> list[dict[str, Any]]:
    """Each call's name, source and verdict, each violation kind once (never arguments)."""
    if audit is None:
        return []
    return [
        {
            "name": call.name,
            "source": call.source,
            "result": call.verdict.result,
            "violations": list(dict.fromkeys(v.kind for v in call.verdict.violations)),
        }
        for call in audit.calls
    ]


def usage(record: RequestRecord) -> tuple[int, int, int, int]:
    """(prompt, completion, cache reads, cache writes); 0 for what the upstream left out."""
    counts = usage_counts(record.usage)
    if counts is None:
        tokens = record.tokens() or (0, 0)
        return tokens[0], tokens[1], 0, 0
    uncached, read, write, output = counts
    return uncached + read + write, output, read, write


EMPTY_CALLS = "[]"
SECRET_MARKS = (b'"signature"', b'"encrypted_content"', b"\\u00")
"""How a field to leave out begins in JSON (or an escape that could spell one): a body with
none of these is stored as it came, with no parsing; only one with any is parsed, scrubbed
and written again. Looked for one by one with `in` (a few hundred ns a body), not one regex
alternation (5 us for a 450-byte answer)."""
SSE_STARTS = (b"data:", b"event:", b":", b"\n")
COLUMNS = (
    "id", "created_at", "request_id", "api", "stream", "key", "model", "provider",
    "deployment", "status", "error_code", "duration_ms", "ttft_ms", "attempts",
    "prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens",
    "cost_usd", "tool_calls", "request", "response", "team",
)  # fmt: skip
"""The order of `build_row`'s values: the requests table's columns (app/console/schema.py)."""


def build_row(
    record: RequestRecord, elapsed: float, created_us: int, redact: Any
) -> tuple[Any, ...]:
    """The row's values in COLUMNS' order: a tuple the driver binds as it is, since the
    writer builds one per request (its CPU counts in the log's cost)."""
    capture: Capture = record.capture
    prompt, completion, read, write = usage(record)
    error = record.error
    code = None if error is None or error[0] is None else redact(error[0])
    calls = EMPTY_CALLS if record.audit is None else _calls_json(record.audit)
    ttft = record.first_token_ms
    stream = record.stream or ttft is not None
    request = response = None
    if capture.request is not None and capture.response is not None:
        request = _stored(_joined(capture.request), redact)
        raw = _joined(capture.response)
        if raw[:16].lstrip().startswith(SSE_STARTS):
            stream = True
            response = _dumped(assemble(capture.api, raw), redact)
        else:
            response = _stored(raw, redact)
    key = record.key
    return (
        f"{created_us:014x}{random.getrandbits(32):08x}",
        created_us,
        record.request_id,
        capture.api,
        stream,
        key.name,
        record.model,
        record.provider,
        record.deployment,
        record.status,
        code,
        round(elapsed * 1000, 1),
        None if ttft is None else round(ttft, 1),
        len(record.attempts),
        prompt,
        completion,
        read,
        write,
        record.cost_usd,
        calls,
        request,
        response,
        key.team,
    )


def _calls_json(audit: ToolCallAudit) -> str:
    calls = tool_calls(audit)
    return orjson.dumps(calls).decode() if calls else EMPTY_CALLS


def _joined(parts: list[bytes]) -> bytes:
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _stored(raw: bytes, redact: Any) -> str | None:
    """A JSON body as it came (secrets redacted), or parsed and scrubbed when it holds a field
    to leave out; not JSON: kept as `{"unparsed": ...}` (the first 4 KiB)."""
    if not raw:
        return None
    if _marked(raw) or not raw[:16].lstrip().startswith((b"{", b"[")):
        return _dumped(_json(raw), redact)
    return str(redact(raw.decode("utf-8", "replace")))


def _marked(raw: bytes) -> bool:
    first, second, third = SECRET_MARKS
    return first in raw or second in raw or third in raw


def _dumped(body: Any, redact: Any) -> str | None:
    return None if body is None else str(redact(orjson.dumps(scrubbed(body)).decode()))


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"unparsed": raw[:4096].decode("utf-8", "replace")}


def scrubbed(value: Any) -> Any:
    """`value` without any `signature` or `encrypted_content` field, at any depth."""
    if isinstance(value, dict):
        return {k: scrubbed(v) for k, v in value.items() if k not in SECRET_FIELDS}
    if isinstance(value, list):
        return [scrubbed(item) for item in value]
    return value
