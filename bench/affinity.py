"""What conversation affinity costs a request (issue 37's budget: <= 10 us CPU), in-process:
the conversation's key computed from a realistic agent request (20 tools, a 10 KB system
prompt with Claude Code's billing line, 30 messages) and the rendezvous pick over a model's
deployments, beside the round-robin pick it replaces. With and without a `prompt_cache_key`
(the cheap path: one short string hashed).

Run: python -m bench.affinity"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from app.config import parse_config
from app.openai_types import chat_request_from_wire
from app.routing.affinity import conversation_key
from app.routing.balancer import Balancer, Cooldowns
from app.routing.router import Router

ROUNDS = 5
CALLS = 20000


def agent_request(**extra: Any) -> dict[str, Any]:
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": "Does one thing the agent needs. " * 8,
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"],
                },
            },
        }
        for i in range(20)
    ]
    system = "x-anthropic-billing-header: cc_version=2.1.1; cch=0a1b2;\n" + (
        "You are an agent that helps with software engineering tasks. " * 170
    )
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for turn in range(15):
        messages.append({"role": "user", "content": f"Step {turn}: read the file and fix it. " * 5})
        messages.append({"role": "assistant", "content": f"Done with step {turn}. " * 10})
    return {"model": "pair", "messages": messages, "tools": tools, **extra}


def per_call_us(work: Callable[[], object]) -> float:
    """The best of ROUNDS rounds, CPU time per call."""
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(CALLS):
            work()
        best = min(best, (time.process_time() - started) / CALLS * 1e6)
    return best


def main() -> None:
    config = parse_config(
        {
            "providers": {"a": {"kind": "openai"}, "b": {"kind": "openai"}},
            "models": [
                {
                    "name": "pair",
                    "deployments": [
                        {"provider": "a", "model": "m", "weight": 3},
                        {"provider": "b", "model": "m", "weight": 1},
                    ],
                }
            ],
        },
        "bench.yaml",
        {},
    )
    route = Router(config).resolve("pair")
    balancer = Balancer(Cooldowns(config.router.cooldown))
    content = chat_request_from_wire(agent_request())
    keyed = chat_request_from_wire(agent_request(prompt_cache_key="a-codex-session-id-0001"))
    tools, messages = len(content.wire["tools"]), len(content.wire["messages"])
    sys.stdout.write(f"request: {tools} tools, {messages} messages\n")
    rows = {
        "an empty call (this machine's pace)": lambda: None,
        "round-robin pick (before)": lambda: balancer.pick(route, 0.0, ()),
        "key from content": lambda: conversation_key(content),
        "key from prompt_cache_key": lambda: conversation_key(keyed),
        "key from content + affinity pick": lambda: balancer.pick(
            route, 0.0, (), conversation_key(content)
        ),
        "key from prompt_cache_key + affinity pick": lambda: balancer.pick(
            route, 0.0, (), conversation_key(keyed)
        ),
    }
    for name, work in rows.items():
        sys.stdout.write(f"{name:42s} {per_call_us(work):6.2f} us CPU\n")


if __name__ == "__main__":
    main()
