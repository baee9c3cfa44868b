"""The proxy's own overhead (issue 29): the request's time less the upstream waits within it,
all read from the record's one clock, so it is never below zero."""

from __future__ import annotations

from collections.abc import Callable

from app.request_record import RequestRecord


def _ticking(step: float) -> Callable[[], float]:
    """A clock that moves `step` seconds each time it is read."""
    now = [100.0]

    def read() -> float:
        now[0] += step
        return now[0]

    return read


def test_overhead_is_the_request_time_less_the_waits_on_its_clock() -> None:
    record = RequestRecord("r", "POST", "/v1/chat/completions", clock=_ticking(0.001))
    since = record.clock()  # 101 ms after the start: 1 ms of the proxy's own
    record.waited_since(since)  # 1 ms of upstream wait
    assert abs(record.upstream_wait - 0.001) < 1e-9
    overhead = record.headers_sent()  # 3 ms in all: 2 of them the proxy's
    assert record.overhead_ms == overhead
    assert abs(overhead - 2.0) < 1e-6


def test_a_wait_ending_with_the_headers_leaves_no_negative_overhead() -> None:
    """The worst case for a coarse second clock: all the request's time is upstream wait.
    Read from the record's own clock, the wait cannot exceed the request's time."""
    record = RequestRecord("r", "POST", "/v1/chat/completions", clock=_ticking(0.0005))
    for _ in range(3):
        record.waited_since(record.clock())
    assert record.headers_sent() >= 0
    assert record.elapsed() >= record.upstream_wait


def test_a_wait_read_from_another_clock_is_what_made_it_negative() -> None:
    """What the relay did before: a wait read from uvloop's `loop.time()` (whole ms of a
    coarse clock) next to a request timed by perf_counter. 0.2 ms of real wait across a
    millisecond boundary reads as 1 ms, more than the whole request."""
    record = RequestRecord("r", "POST", "/v1/chat/completions", clock=_ticking(0.0002))
    loop_started, loop_now = 0.000, 0.001  # the coarse clock's two readings
    record.upstream_wait += loop_now - loop_started
    assert record.headers_sent() < 0  # the mix-up; waited_since is the cure
