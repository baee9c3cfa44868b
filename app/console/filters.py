"""/v1/logs' query string read into filters (pure: no database): each bad value a 400 that
names its parameter, never a 5xx."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
APIS = ("chat", "responses", "messages", "embeddings")


@dataclass(frozen=True, slots=True)
class LogFilters:
    model: str | None = None
    key: str | None = None
    status: int | None = None
    api: str | None = None
    since: int | None = None  # microseconds, inclusive
    until: int | None = None  # microseconds, exclusive
    limit: int = DEFAULT_LIMIT
    after: tuple[int, str] | None = None  # the cursor: the last row's (created_at, id)


def parse_filters(params: Any) -> LogFilters:
    """`params`: a mapping of query parameters (Starlette's QueryParams)."""
    status, api = params.get("status"), params.get("api")
    if api is not None and api not in APIS:
        raise InvalidRequest(f"api: one of {', '.join(APIS)}", param="api")
    return LogFilters(
        model=params.get("model") or None,
        key=params.get("key") or None,
        status=None if status is None else _integer(status, "status", 100, 599),
        api=api,
        since=_time(params.get("since"), "since"),
        until=_time(params.get("until"), "until"),
        limit=_limit(params.get("limit")),
        after=decode_cursor(params.get("cursor")),
    )


def _integer(text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidRequest(f"{name}: an integer", param=name) from None
    if not low <= value <= high:
        raise InvalidRequest(f"{name}: from {low} to {high}", param=name)
    return value


def _limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    return min(_integer(text, "limit", 1, 10**9), MAX_LIMIT)


def _time(text: str | None, name: str) -> int | None:
    """ISO 8601 as microseconds since the epoch; a time without an offset is UTC."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise InvalidRequest(f"{name}: an ISO 8601 time", param=name) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return to_micros(moment)
    except (OverflowError, ValueError):
        raise InvalidRequest(f"{name}: an ISO 8601 time", param=name) from None


def to_micros(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def iso(micros: int) -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffffZ`."""
    moment = datetime.fromtimestamp(micros / 1_000_000, UTC)
    moment = moment.replace(microsecond=micros % 1_000_000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode_cursor(created_at: int, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created_at}:{row_id}".encode()).decode().rstrip("=")


def decode_cursor(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        created, _, row_id = raw.partition(":")
        if not row_id:
            raise ValueError(raw)
        return int(created), row_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidRequest("cursor: not a cursor this API gave", param="cursor") from None
