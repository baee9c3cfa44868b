"""Conversation affinity across replicas (CONTRACT.md, "Prompt caching"; issue 37): two
`python -m app` processes with their own memory store, nothing shared, serve a model with three
deployments (three mock upstreams that record what reached them). The turns of each
conversation, sent to the two replicas in turn with the openai SDK (chat with no key, the
history growing; Responses with Codex's `prompt_cache_key`), all reach one upstream, and the
conversations between them reach more than one. When a conversation's upstream fails, the turn
goes to another; while it rests on a replica that saw it fail, that replica's turns stay on the
other; once healthy, turns go back to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import PROVIDER_KEY, RunningProxy, keyed_config, run_proxy, sdk_client
from tests.helpers.mock_upstream import OPENAI_PATH, Exchange, MockUpstream, Reply
from tests.helpers.upstream_answers import openai_tool_completion

pytestmark = pytest.mark.e2e

UNAVAILABLE = {"error": {"message": "overloaded", "type": "server_error"}}


class Deployment(MockUpstream):
    """An openai upstream that answers every request, or a 503 while `failing` > 0."""

    def __init__(self) -> None:
        super().__init__(screen=self._answer)
        self.failing = 0

    def _answer(self, exchange: Exchange) -> Reply:
        if self.failing:
            self.failing -= 1
            return Reply(503, json=UNAVAILABLE)
        answer = openai_tool_completion()
        message = {"role": "assistant", "content": "Done.", "refusal": None}
        answer["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
        return Reply(json=answer)


def config(deployments: list[Deployment], cooldown: str) -> str:
    providers = "\n".join(
        f"  d{i}: {{kind: openai, base_url: {d.base_url}/v1, api_key: {PROVIDER_KEY}}}"
        for i, d in enumerate(deployments)
    )
    listed = ", ".join(f"{{provider: d{i}, model: m}}" for i in range(len(deployments)))
    text = keyed_config(providers, f"  - {{name: pool, deployments: [{listed}]}}")
    return text.replace("  retries: 0", f"  retries: 1\n  backoff: 0\n  cooldown: {cooldown}")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[list[Deployment], list[RunningProxy]]]:
    with ExitStack() as stack:
        deployments = [stack.enter_context(Deployment()) for _ in range(3)]
        proxies = []
        for name in ("a", "b"):
            directory = tmp_path / name
            directory.mkdir()
            cooldown = "{failures: 1, window: 60, seconds: 600}"
            proxies.append(stack.enter_context(run_proxy(config(deployments, cooldown), directory)))
        yield deployments, proxies


def hit(deployments: list[Deployment], before: list[int]) -> list[int]:
    """The deployments that received a request since `before` (each one's request count)."""
    return [
        i
        for i, d in enumerate(deployments)
        for _ in range(len(d.requests(OPENAI_PATH)) - before[i])
    ]


def counts(deployments: list[Deployment]) -> list[int]:
    return [len(d.requests(OPENAI_PATH)) for d in deployments]


def chat_turn(proxy: RunningProxy, messages: list[dict[str, Any]]) -> None:
    client = sdk_client(proxy)
    answer = client.chat.completions.create(model="pool", messages=messages)  # type: ignore[arg-type]
    messages.append({"role": "assistant", "content": answer.choices[0].message.content})


def test_each_conversations_turns_reach_one_deployment_from_either_replica(
    cluster: tuple[list[Deployment], list[RunningProxy]],
) -> None:
    deployments, proxies = cluster
    homes: set[int] = set()
    for conversation in range(8):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a careful agent."},
            {"role": "user", "content": f"Task {conversation}: fix the failing test."},
        ]
        reached: list[int] = []
        for turn in range(4):
            before = counts(deployments)
            chat_turn(proxies[turn % 2], messages)
            messages.append({"role": "user", "content": f"Now step {turn + 1}."})
            reached += hit(deployments, before)
        assert len(set(reached)) == 1, (conversation, reached)
        homes |= set(reached)
    for conversation in range(8):
        reached = []
        for turn in range(4):
            before = counts(deployments)
            sdk_client(proxies[turn % 2]).responses.create(
                model="pool",
                input=f"Codex task {conversation}, turn {turn}",
                prompt_cache_key=f"codex-session-{conversation}",
                store=False,
            )
            reached += hit(deployments, before)
        assert len(set(reached)) == 1, (conversation, reached)
        homes |= set(reached)
    assert len(homes) > 1, "conversations spread over the deployments"


def test_a_failing_deployments_turn_moves_and_comes_back(
    cluster: tuple[list[Deployment], list[RunningProxy]],
) -> None:
    deployments, (first, second) = cluster
    messages: list[dict[str, Any]] = [{"role": "user", "content": "A long task."}]
    before = counts(deployments)
    chat_turn(first, messages)
    (home,) = hit(deployments, before)

    deployments[home].failing = 1
    before = counts(deployments)
    chat_turn(first, messages)  # the home fails: retried on another, and rests on `first`
    reached = hit(deployments, before)
    assert len(reached) == 2
    assert home in reached
    (other,) = set(reached) - {home}

    before = counts(deployments)
    chat_turn(first, messages)  # still resting on `first`: the same other one
    assert hit(deployments, before) == [other]

    before = counts(deployments)
    chat_turn(second, messages)  # `second` saw nothing fail: the home, healthy again
    assert hit(deployments, before) == [home]
