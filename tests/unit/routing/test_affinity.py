"""Conversation affinity (CONTRACT.md, "Prompt caching"): a conversation's key, and the
weighted rendezvous pick that sends its turns to one deployment while it is healthy."""

from __future__ import annotations

from collections import Counter
from typing import Any

from app.config import parse_config
from app.openai_types import chat_request_from_wire
from app.routing.affinity import conversation_key
from app.routing.balancer import Balancer, Cooldowns
from app.routing.router import Router

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
            {
                "name": "three",
                "strategy": "least-busy",
                "deployments": [
                    {"provider": "a", "model": "m", "weight": 1},
                    {"provider": "b", "model": "m", "weight": 2},
                    {"provider": "c", "model": "m", "weight": 5},
                ],
            },
        ],
        "router": {"cooldown": {"failures": 1, "window": 10, "seconds": 30}},
    },
    "c.yaml",
    {},
)
ROUTER = Router(CONFIG)


def balancer() -> Balancer:
    return Balancer(Cooldowns(CONFIG.router.cooldown))


def key(**wire: Any) -> int | None:
    wire.setdefault("messages", turns("hi"))
    return conversation_key(chat_request_from_wire({"model": "spread", **wire}))


def turns(first: str, *more: dict[str, Any], system: str = "sys") -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": first}, *more]


def test_across_many_conversations_the_weights_hold() -> None:
    for name, weights in (("spread", {"a": 3, "b": 1}), ("three", {"a": 1, "b": 2, "c": 5})):
        chooser, route = balancer(), ROUTER.resolve(name)
        picks = Counter(
            chooser.pick(route, 0.0, conversation=key(prompt_cache_key=f"conv-{i}")).key
            for i in range(8000)
        )
        total = sum(weights.values())
        for deployment in route.deployments:
            share = picks[deployment.key] / 8000
            expected = weights[deployment.target.provider_name] / total
            assert abs(share - expected) < 0.025, (name, deployment.key, share, expected)


def test_the_turns_of_one_conversation_go_to_one_deployment_from_any_replica() -> None:
    route = ROUTER.resolve("three")
    for i in range(50):
        conversation = key(prompt_cache_key=f"conv-{i}")
        first, second = balancer(), balancer()  # two replicas: no state in common
        picked = {first.pick(route, 0.0, conversation=conversation).key for _ in range(5)}
        picked |= {second.pick(route, 0.0, conversation=conversation).key for _ in range(5)}
        assert len(picked) == 1


def test_a_resting_deployment_is_skipped_and_gets_its_conversations_back() -> None:
    chooser, route = balancer(), ROUTER.resolve("three")
    conversations = [key(prompt_cache_key=f"conv-{i}") for i in range(200)]
    home = {c: chooser.pick(route, 0.0, conversation=c).key for c in conversations}
    resting = route.deployments[2].key
    assert chooser.cooldowns.failed(resting, 100.0) is not None
    during = {c: chooser.pick(route, 101.0, conversation=c).key for c in conversations}
    assert resting not in during.values()
    moved = [c for c in conversations if home[c] != during[c]]
    assert moved
    assert all(home[c] == resting for c in moved), "only the resting one's moved"
    after = {c: chooser.pick(route, 131.0, conversation=c).key for c in conversations}
    assert after == home


def test_a_retry_within_the_request_goes_to_another_deployment() -> None:
    chooser, route = balancer(), ROUTER.resolve("spread")
    conversation = key(prompt_cache_key="conv")
    home = chooser.pick(route, 0.0, conversation=conversation).key
    other = chooser.pick(route, 0.0, [home], conversation).key
    assert other != home


def test_a_conversation_is_named_by_its_key_then_its_user_then_its_content() -> None:
    messages = turns("hello")
    assert key(messages=messages, prompt_cache_key="k") != key(messages=messages)
    assert key(messages=turns("a"), prompt_cache_key="k") == key(
        messages=turns("b"), prompt_cache_key="k"
    )
    assert key(messages=turns("a"), user="u") == key(messages=turns("b"), user="u")
    assert key(messages=turns("a"), safety_identifier="s") == key(
        messages=turns("b"), safety_identifier="s"
    )
    assert key(messages=turns("a"), user="u") != key(messages=turns("a"), user="v")


def test_without_a_name_the_tools_system_and_first_message_are_the_key() -> None:
    tools = [{"type": "function", "function": {"name": "read"}}]
    first_turn = key(messages=turns("fix the bug"), tools=tools)
    later = turns(
        "fix the bug",
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    )
    assert key(messages=later, tools=tools) == first_turn
    assert key(messages=turns("another task"), tools=tools) != first_turn
    assert key(messages=turns("fix the bug", system="other"), tools=tools) != first_turn
    assert key(messages=turns("fix the bug")) != first_turn


def test_claude_codes_billing_line_never_counts_in_the_key() -> None:
    def with_billing(hash_: str) -> int | None:
        system = f"x-anthropic-billing-header: cc_version=2.1.1; cch={hash_};\nYou are an agent."
        return key(messages=turns("task", system=system))

    assert (
        with_billing("aaaa")
        == with_billing("bbbb")
        == key(messages=turns("task", system="You are an agent."))
    )
    joined = "x-anthropic-billing-header: cch=cccc;\n\nYou are an agent."  # the Messages face's
    assert key(messages=turns("task", system=joined)) == with_billing("aaaa")
    long_system = "You are an agent. " * 1000
    assert key(messages=turns("task", system=f"{BILLING}1;\n{long_system}")) == key(
        messages=turns("task", system=f"{BILLING}2;\n{long_system}")
    )


BILLING = "x-anthropic-billing-header: cc_version=2.1.1; cch="


def test_a_request_with_nothing_to_name_a_conversation_keeps_round_robin() -> None:
    assert key(messages=[{"role": "user", "content": ""}]) is None
    chooser, route = balancer(), ROUTER.resolve("spread")
    picks = Counter(
        chooser.pick(route, 0.0, conversation=None).target.provider_name for _ in range(8)
    )
    assert picks == {"a": 6, "b": 2}
