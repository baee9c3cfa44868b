"""The prompt-cache doubles (tests/helpers/prompt_cache_double.py) against what the providers
document: with breakpoints placed by hand a loop reads its prefix, without them nothing; the
1024-token floor, the 20-block lookback, the limit of 4; OpenAI's 128-token steps."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.prompt_cache_double import (
    LOOKBACK,
    AutomaticCache,
    ExplicitCache,
    TooManyBreakpoints,
    openai_prompt,
)

MARK = {"type": "ephemeral"}
SYSTEM = "You are a careful coding agent. " * 300  # ~2400 tokens
TOOLS = [{"name": f"tool_{n}", "input_schema": {"type": "object"}} for n in range(5)]


def anthropic_turn(turns: int, *, marks: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"step {n}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"did {n}"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "next"}]})
    system: list[dict[str, Any]] = [{"type": "text", "text": SYSTEM}]
    tools = [dict(tool) for tool in TOOLS]
    if marks:
        tools[-1]["cache_control"] = MARK
        system[-1]["cache_control"] = MARK
        messages[-1]["content"][-1]["cache_control"] = MARK
    return {"tools": tools, "system": system, "messages": messages}


def to_bedrock(body: dict[str, Any]) -> dict[str, Any]:
    point = {"cachePoint": {"type": "default"}}

    def blocks(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for item in items:
            out.append({key: value for key, value in item.items() if key != "cache_control"})
            out += [point] if "cache_control" in item else []
        return out

    return {
        "toolConfig": {"tools": blocks(body["tools"])},
        "system": blocks(body["system"]),
        "messages": [
            {"role": message["role"], "content": blocks(message["content"])}
            for message in body["messages"]
        ],
    }


@pytest.mark.parametrize("kind", ["anthropic", "bedrock"])
def test_a_loop_with_breakpoints_reads_its_prefix_and_without_reads_nothing(kind: str) -> None:
    marked, bare = ExplicitCache(kind), ExplicitCache(kind)
    for turn in range(6):
        for cache, marks in ((marked, True), (bare, False)):
            body = anthropic_turn(turn, marks=marks)
            cache.serve(body if kind == "anthropic" else to_bedrock(body))
    assert marked.counters.usages[0].read == 0
    assert marked.counters.usages[0].write > 2000
    assert all(marked.counters.read_share(turn) > 0.9 for turn in range(1, 6))
    assert bare.counters.read == 0
    assert bare.counters.written == 0
    assert marked.counters.cost() < 0.5 * bare.counters.cost()


def test_a_prefix_under_1024_tokens_is_neither_written_nor_read() -> None:
    cache = ExplicitCache("anthropic")
    short = {"system": [{"type": "text", "text": "Short.", "cache_control": MARK}], "messages": []}
    short["messages"] = [{"role": "user", "content": "hi"}]
    assert cache.serve(short).write == 0
    assert cache.serve(short).read == 0


def test_the_lookback_is_20_blocks_from_a_breakpoint() -> None:
    cache = ExplicitCache("anthropic")
    cache.serve(anthropic_turn(0, marks=True))
    far = anthropic_turn(LOOKBACK, marks=True)  # 2 x 20 blocks added after the last entry
    del far["system"][-1]["cache_control"]
    del far["tools"][-1]["cache_control"]
    assert cache.serve(far).read == 0  # the message breakpoint alone cannot reach back
    near = anthropic_turn(LOOKBACK // 4, marks=True)
    assert cache.serve(near).read > 2000  # the system breakpoint's entry


def test_a_fifth_breakpoint_is_refused() -> None:
    body = anthropic_turn(3, marks=True)
    for message in body["messages"][:2]:
        message["content"][0]["cache_control"] = MARK
    with pytest.raises(TooManyBreakpoints, match="A maximum of 4 blocks with cache_control"):
        ExplicitCache("anthropic").serve(body)


def test_automatic_caching_reads_the_shared_prefix_in_128_token_steps_from_1024() -> None:
    cache = AutomaticCache()
    base = {"messages": [{"role": "system", "content": "x" * 4 * 1500}]}
    assert cache.serve(openai_prompt(base)).read == 0
    longer = {"messages": [*base["messages"], {"role": "user", "content": "hi"}]}
    read = cache.serve(openai_prompt(longer)).read
    assert read >= 1024
    assert (read - 1024) % 128 == 0
    assert AutomaticCache().serve(openai_prompt({"messages": [{"role": "user", "content": "a"}]}))
    small = AutomaticCache()
    tiny = openai_prompt({"messages": [{"role": "user", "content": "x" * 400}]})
    small.serve(tiny)
    assert small.serve(tiny).read == 0
