"""Placing prompt-cache breakpoints, in-process (issue 37's budget: <= 10 us CPU per request), on
a realistic agent request: 20 tools, a 10 KB system prompt, 30 messages with tool rounds.

Measures app/translators/prompt_cache.py's `auto_marks` (where breakpoints go, and the check of
the client's own) alone, and the whole anthropic and bedrock `build_request` with
`prompt_cache: auto` and `off` side by side. `--only-build` measures just the build (for a tree
without prompt_cache.py: `cd ../before && python -m bench.prompt_cache --only-build`).

Run: python -m bench.prompt_cache"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.translators.anthropic.request import build_request as anthropic_request
from app.translators.base import Target
from app.translators.bedrock.request import build_request as bedrock_request

ROUNDS = 3000
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def agent_request() -> bytes:
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{n}",
                "description": f"Tool {n}: does one careful thing to the working tree. " * 3,
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"],
                },
            },
        }
        for n in range(20)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Read the code before changing it. " * 300},  # ~10 KB
        {"role": "user", "content": "Fix the failing test in module_0.py."},
    ]
    for n in range(14):  # 28 more: an assistant call and its result each
        call = {"name": f"tool_{n}", "arguments": orjson.dumps({"path": f"m{n}.py"}).decode()}
        messages.append(
            {
                "role": "assistant",
                "content": f"Looking at m{n}.py.",
                "tool_calls": [{"id": f"call_{n}", "type": "function", "function": call}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": "x = 1\n" * 40})
    return orjson.dumps({"model": "m", "messages": messages, "tools": tools})


def cpu_us(work: Callable[[], object]) -> float:
    """The least CPU per call over 5 runs (the machine is shared: the least is the cost)."""
    for _ in range(300):
        work()
    runs = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(ROUNDS // 5):
            work()
        runs.append((time.process_time() - started) / (ROUNDS // 5) * 1e6)
    return min(runs)


def targets(setting: str | None) -> dict[str, tuple[Callable[..., Any], Target]]:
    extra = {} if setting is None else {"prompt_cache": setting}
    anthropic = ProviderConfig(kind="anthropic", api_key="k")
    bedrock = ProviderConfig(kind="bedrock", region="us-east-1", api_key="k")
    return {
        "anthropic": (
            anthropic_request,
            Target("m", "an", anthropic, "claude-sonnet-4-5", **extra),
        ),
        "bedrock": (bedrock_request, Target("m", "aws", bedrock, BEDROCK_MODEL, **extra)),
    }


def main() -> None:
    request = parse_chat_request(agent_request())
    print(f"request: {len(agent_request())} bytes, {len(request.messages)} messages")  # noqa: T201
    only_build = "--only-build" in sys.argv
    settings: tuple[str | None, ...] = (None,) if only_build else ("auto", "off")
    if not only_build:
        from app.translators.prompt_cache import auto_marks  # noqa: PLC0415 (absent before)

        target = targets("auto")["anthropic"][1]
        cost = cpu_us(lambda: auto_marks(request, target))
        print(f"auto_marks (placement and the client's-own check): {cost:5.2f} us CPU")  # noqa: T201
    for setting in settings:
        for kind, (build, target) in targets(setting).items():
            cost = cpu_us(lambda build=build, target=target: build(request, target))
            label = setting or "this tree"
            print(f"{kind:9} build_request, {label:9}: {cost:7.1f} us CPU")  # noqa: T201


if __name__ == "__main__":
    main()
