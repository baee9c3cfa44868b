"""Backoff, retry-after parsing and effective timeouts: the arithmetic of the retry loop."""

from __future__ import annotations

import email.utils

import pytest

from app.config import RouterConfig, TimeoutsConfig, effective_timeouts, parse_config
from app.routing.backoff import retry_after_seconds, retry_delay


def test_backoff_doubles_with_equal_jitter_up_to_the_ceiling() -> None:
    router = RouterConfig(backoff=0.5, max_backoff=3)
    lowest = [retry_delay(n, router, None, lambda: 0.0) for n in range(5)]
    highest = [retry_delay(n, router, None, lambda: 1.0) for n in range(5)]
    assert lowest == [0.25, 0.5, 1.0, 1.5, 1.5]
    assert highest == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_retry_after_wins_over_backoff() -> None:
    assert retry_delay(0, RouterConfig(backoff=5), 0.2) == 0.2


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": email.utils.formatdate(1000.0 + 30, usegmt=True)}, 30.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers, now=lambda: 1000.0) == seconds


def test_timeouts_take_the_model_then_the_provider_then_the_default() -> None:
    config = parse_config(
        {
            "providers": {"p": {"kind": "openai", "timeout": 90, "timeouts": {"idle": 20}}},
            "models": [
                {"name": "m", "provider": "p", "model": "x", "timeouts": {"first_token": 5}}
            ],
        },
        "c.yaml",
        {},
    )
    provider, model = config.providers["p"], config.models[0]
    assert effective_timeouts(provider, model) == TimeoutsConfig(
        connect=10, first_token=5, idle=20, total=90
    )
    assert effective_timeouts(provider, None).first_token == 600
