"""Deployment choice: weighted round-robin, least-busy, cooldowns, and the soonest-recovering
fallback when all are cooling down. Time is passed in by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from app.config import CooldownConfig, parse_config
from app.routing.balancer import Balancer, Cooldowns
from app.routing.router import Route, Router

CONFIG = parse_config(
    {
        "providers": {"a": {"kind": "openai"}, "b": {"kind": "openai"}, "c": {"kind": "openai"}},
        "models": [
            {
                "name": "spread",
                "deployments": [
                    {"provider": "a", "model": "m", "weight": 3},
                    {"provider": "b", "model": "m", "weight": 1},
                ],
            },
            {"name": "twice", "provider": "a", "model": "m1"},
            {"name": "twice", "provider": "c", "model": "m2", "weight": 2},
            {
                "name": "busy",
                "strategy": "least-busy",
                "deployments": [{"provider": "a", "model": "m"}, {"provider": "b", "model": "m"}],
            },
        ],
        "router": {"cooldown": {"failures": 2, "window": 10, "seconds": 30}},
    },
    "c.yaml",
    {},
)
ROUTER = Router(CONFIG)


def balancer() -> Balancer:
    return Balancer(Cooldowns(CONFIG.router.cooldown))


def providers(route: Route, picks: int, chooser: Balancer, now: float = 0.0) -> Counter[str]:
    return Counter(chooser.pick(route, now).target.provider_name for _ in range(picks))


def test_weighted_round_robin_follows_the_weights_exactly_and_smoothly() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    order = [chooser.pick(route, 0.0).target.provider_name for _ in range(8)]
    assert Counter(order) == {"a": 6, "b": 2}
    assert order[:4].count("b") == 1, "smooth: b's turn comes inside every cycle of 4"


def test_a_name_listed_twice_serves_both_entries() -> None:
    route = ROUTER.resolve("twice")
    assert [d.target.upstream_model for d in route.deployments] == ["m1", "m2"]
    assert providers(route, 30, balancer()) == {"a": 10, "c": 20}


def test_a_cooling_deployment_is_skipped_until_it_recovers() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    a_key = route.deployments[0].key
    chooser.cooldowns.failed(a_key, 100.0)
    assert providers(route, 4, chooser, now=101.0) == {"a": 3, "b": 1}, "one failure: no cooldown"
    chooser.cooldowns.failed(a_key, 102.0)
    assert providers(route, 4, chooser, now=103.0) == {"b": 4}
    assert providers(route, 8, chooser, now=132.5) == {"a": 6, "b": 2}, "recovered after 30 s"


def test_failures_outside_the_window_do_not_add_up() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    a_key = route.deployments[0].key
    chooser.cooldowns.failed(a_key, 0.0)
    chooser.cooldowns.failed(a_key, 11.0)
    assert chooser.cooldowns.cooling_until(a_key, 11.0) == 0.0


def test_a_429_cools_down_at_once_for_its_retry_after_when_longer() -> None:
    cooldowns = Cooldowns(CooldownConfig(failures=3, window=60, seconds=30))
    cooldowns.failed("k", 0.0, rate_limited=True, retry_after=45.0)
    assert cooldowns.cooling_until("k", 1.0) == 45.0
    assert cooldowns.cooling_until("k", 45.0) == 0.0


def test_when_all_cool_down_the_soonest_to_recover_is_tried() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    a_key, b_key = (d.key for d in route.deployments)
    chooser.cooldowns.failed(a_key, 0.0, rate_limited=True, retry_after=60.0)
    chooser.cooldowns.failed(b_key, 0.0, rate_limited=True)
    assert chooser.pick(route, 1.0).key == b_key


def test_a_deployment_that_failed_this_request_is_avoided_while_another_is_left() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    a_key, b_key = (d.key for d in route.deployments)
    assert {chooser.pick(route, 0.0, [a_key]).key for _ in range(5)} == {b_key}
    assert chooser.pick(route, 0.0, [a_key, b_key]).key in {a_key, b_key}


def test_least_busy_picks_the_deployment_with_fewest_in_flight() -> None:
    chooser, route = balancer(), ROUTER.resolve("busy")
    a_key, b_key = (d.key for d in route.deployments)
    chooser.started(a_key)
    chooser.started(a_key)
    chooser.started(b_key)
    assert {chooser.pick(route, 0.0).key for _ in range(4)} == {b_key}
    chooser.ended(a_key)
    chooser.ended(a_key)
    assert {chooser.pick(route, 0.0).key for _ in range(4)} == {a_key}
    assert chooser.in_flight(b_key) == 1


@pytest.mark.parametrize("name", ["spread", "busy"])
def test_a_single_deployment_route_is_always_itself(name: str) -> None:
    route = ROUTER.resolve(name)
    single = Route(route.model_name, route.deployments[:1])
    chooser = balancer()
    chooser.cooldowns.failed(single.deployments[0].key, 0.0, rate_limited=True)
    assert chooser.pick(single, 1.0) is single.deployments[0]
