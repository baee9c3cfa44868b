"""How long a retry waits: the upstream's own retry-after when it gave one, else an
exponential backoff with jitter."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping

from app.config import RouterConfig


def retry_delay(
    retry: int,
    router: RouterConfig,
    retry_after: float | None,
    random_fraction: Callable[[], float] = random.random,
) -> float:
    """The wait before retry number `retry` (0-based) on the same deployment: the upstream's
    retry-after when it gave one, else `backoff` doubled per retry up to `max_backoff`, with
    "equal jitter" (between half and all of it) so clients retrying together spread out."""
    if retry_after is not None:
        return retry_after
    ceiling = min(router.max_backoff, router.backoff * 2.0**retry)
    return ceiling / 2 + random_fraction() * ceiling / 2


def retry_after_seconds(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """`retry-after-ms` (OpenAI's, exact), else `retry-after` in seconds or as an HTTP date;
    None when neither is there or readable."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())
