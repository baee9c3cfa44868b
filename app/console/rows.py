"""A finished request as a row of the log, built in the writer from the RequestRecord the
request path handed over (app/request_record.py), the tool-call audit it holds and the bytes
its Capture kept. Stored bodies leave out what could authenticate anyone: thinking
`signature`s and `encrypted_content` (headers and keys never reach a Capture)."""

from __future__ import annotations

import secrets
from typing import Any

import orjson

from app.console.assemble import assemble
from app.console.capture import Capture
from app.request_record import RequestRecord
from app.spend.prices import usage_counts
from app.toolcalls.audit import ToolCallAudit

SECRET_FIELDS = frozenset({"signature", "encrypted_content"})


def new_id() -> str:
    return secrets.token_hex(8)


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


def build_row(
    record: RequestRecord, elapsed: float, created_us: int, redact: Any
) -> dict[str, Any]:
    capture: Capture = record.capture
    prompt, completion, read, write = usage(record)
    code = None if record.error is None else record.error[0]
    row: dict[str, Any] = {
        "id": new_id(),
        "created_at": created_us,
        "request_id": record.request_id,
        "api": capture.api,
        "stream": record.stream or record.first_token_ms is not None,
        "key": record.key.name,
        "team": record.key.team,
        "model": record.model,
        "provider": record.provider,
        "deployment": record.deployment,
        "status": record.status,
        "error_code": None if code is None else redact(code),
        "duration_ms": round(elapsed * 1000, 1),
        "ttft_ms": None if record.first_token_ms is None else round(record.first_token_ms, 1),
        "attempts": len(record.attempts),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "cost_usd": record.cost_usd,
        "tool_calls": orjson.dumps(tool_calls(record.audit)).decode(),
        "request": None,
        "response": None,
    }
    if capture.request is not None and capture.response is not None:
        _add_bodies(row, capture, redact)
    return row


def _add_bodies(row: dict[str, Any], capture: Capture, redact: Any) -> None:
    request = _json(b"".join(capture.request or ()))
    if isinstance(request, dict) and request.get("stream") is True:
        row["stream"] = True
    raw = b"".join(capture.response or ())
    response = assemble(capture.api, raw) if row["stream"] else _json(raw)
    for name, body in (("request", request), ("response", response)):
        if body is not None:
            row[name] = redact(orjson.dumps(scrubbed(body)).decode())


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
