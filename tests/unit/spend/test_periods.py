"""UTC calendar periods: where each starts, when it resets (month and year ends, leap years,
weeks from Monday), their names in the store, and `total`, which never resets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.spend.periods import next_reset, period_start, period_tag, seconds_until, utc


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("now", "start", "reset"),
    [
        (at(2026, 11, 27, 22, 6, 4), at(2026, 11, 27), at(2026, 11, 28)),
        (at(2026, 12, 31, 23, 59, 59), at(2026, 12, 31), at(2027, 1, 1)),
        (at(2026, 1, 1), at(2026, 1, 1), at(2026, 1, 2)),
        (at(2028, 2, 28, 12), at(2028, 2, 28), at(2028, 2, 29)),
    ],
)
def test_day(now: datetime, start: datetime, reset: datetime) -> None:
    assert period_start("day", now) == start
    assert next_reset("day", now) == reset


@pytest.mark.parametrize(
    ("now", "start"),
    [
        (at(2026, 11, 23), at(2026, 11, 23)),  # a Monday, at midnight: its own week
        (at(2026, 11, 27, 22, 6), at(2026, 11, 23)),  # Friday
        (at(2026, 11, 29, 23, 59, 59), at(2026, 11, 23)),  # Sunday, the week's last second
        (at(2026, 11, 30), at(2026, 11, 30)),  # the next Monday
        (at(2027, 1, 2), at(2026, 12, 28)),  # a week across the year's end
    ],
)
def test_week_starts_on_monday(now: datetime, start: datetime) -> None:
    assert period_start("week", now) == start
    assert start.weekday() == 0
    assert next_reset("week", now) == start + timedelta(days=7)


@pytest.mark.parametrize(
    ("now", "start", "reset"),
    [
        (at(2026, 11, 27, 22), at(2026, 11, 1), at(2026, 12, 1)),
        (at(2026, 12, 31, 23, 59, 59, 999999), at(2026, 12, 1), at(2027, 1, 1)),
        (at(2027, 1, 1), at(2027, 1, 1), at(2027, 2, 1)),
        (at(2028, 2, 29, 8), at(2028, 2, 1), at(2028, 3, 1)),
        (at(2027, 2, 28, 23), at(2027, 2, 1), at(2027, 3, 1)),
        (at(2026, 1, 31, 23, 59), at(2026, 1, 1), at(2026, 2, 1)),
    ],
)
def test_month(now: datetime, start: datetime, reset: datetime) -> None:
    assert period_start("month", now) == start
    assert next_reset("month", now) == reset


def test_total_has_no_start_and_no_reset() -> None:
    now = at(2026, 11, 27)
    assert period_start("total", now) is None
    assert next_reset("total", now) is None
    assert period_tag("total", now) == "total"


def test_periods_are_utc_whatever_the_instant_is_given_in() -> None:
    # 01:30 on Dec 1st in UTC+3 is still November 30th in UTC.
    east = datetime(2026, 12, 1, 1, 30, tzinfo=timezone(timedelta(hours=3)))
    assert period_start("month", east) == at(2026, 11, 1)
    assert period_start("day", east) == at(2026, 11, 30)
    assert period_tag("month", east) == "2026-11-01"


def test_tags_name_the_period_start() -> None:
    now = at(2026, 11, 27, 22)
    assert period_tag("day", now) == "2026-11-27"
    assert period_tag("week", now) == "2026-11-23"
    assert period_tag("month", now) == "2026-11-01"


def test_seconds_until_rounds_up_and_is_at_least_one() -> None:
    reset = at(2026, 11, 28)
    assert seconds_until(reset, at(2026, 11, 27, 23, 59, 59)) == 1
    assert seconds_until(reset, at(2026, 11, 27, 23, 59, 58, 500000)) == 2
    assert seconds_until(reset, at(2026, 11, 27)) == 86400
    assert seconds_until(reset, reset) == 1


def test_utc_reads_unix_time() -> None:
    assert utc(1_800_000_000.5) == at(2027, 1, 15, 8, 0, 0, 500000)
