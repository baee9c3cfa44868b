"""A budget's period: UTC calendar days, weeks (starting on Monday) and months, or `total`
(never resets). Pure functions of an instant, so every replica that agrees on the time agrees
on which period's counters a request goes into, and tests give the instant by hand.

A period is named in the store by its start (`2026-11-01`), so the counters of a new period
start at zero without anyone resetting them, and an old period's keys simply expire."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Literal

Period = Literal["day", "week", "month", "total"]

TOTAL_TAG = "total"
"""The store's name for the one period a `total` budget has."""


def period_start(period: Period, now: datetime) -> datetime | None:
    """The start (UTC midnight) of the period `now` is in; None for `total`."""
    now = now.astimezone(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return midnight
    if period == "week":
        return midnight - timedelta(days=midnight.weekday())
    if period == "month":
        return midnight.replace(day=1)
    return None


def next_reset(period: Period, now: datetime) -> datetime | None:
    """When the period `now` is in ends and the next one starts; None for `total`."""
    start = period_start(period, now)
    if start is None:
        return None
    if period == "day":
        return start + timedelta(days=1)
    if period == "week":
        return start + timedelta(days=7)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def period_tag(period: Period, now: datetime) -> str:
    """The period's name in the store: its start date, or `total`."""
    start = period_start(period, now)
    return TOTAL_TAG if start is None else start.date().isoformat()


def seconds_until(moment: datetime, now: datetime) -> int:
    """Whole seconds from `now` to `moment`, rounded up (at least 1): a client that waits this
    long is in the next period."""
    return max(1, math.ceil((moment - now).total_seconds()))


def utc(timestamp: float) -> datetime:
    """A Unix time as an aware UTC datetime."""
    return datetime.fromtimestamp(timestamp, UTC)
