"""Hypothesis strategies for conversations the OpenAI API accepts: system and developer
messages anywhere, user and assistant turns (text, text parts, empty strings), leading
assistant turns, consecutive same-role turns, assistant turns with one or several tool calls
(with or without text) each answered by tool messages right after, in any order."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TOOL_NAMES = ("get_weather", "get_time", "search")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
    for name in TOOL_NAMES
]
TEXTS = st.sampled_from(["", " ", "\n", "Hi", "Paris?", "  padded  ", "It is 18C.\n", "ok"])
ARGUMENTS = st.sampled_from(["{}", '{"q": "Paris"}', '{"q": ""}', " {} "])
ID_STYLES = ("call_{n}", "toolu_0{n}", "functions.get_weather:{n}", "call|{n}", "c" * 50 + "{n}")


@st.composite
def contents(draw: st.DrawFn, *, parts: bool = True) -> Any:
    if parts and draw(st.booleans()):
        texts = draw(st.lists(TEXTS, min_size=1, max_size=3))
        return [{"type": "text", "text": text} for text in texts]
    return draw(TEXTS)


@st.composite
def tool_turn(draw: st.DrawFn, first_id: int) -> list[dict[str, Any]]:
    """An assistant message with calls, then one tool message per call, in any order."""
    count = draw(st.integers(1, 3))
    style = draw(st.sampled_from(ID_STYLES))
    calls = [
        {
            "id": style.format(n=first_id + offset),
            "type": "function",
            "function": {
                "name": draw(st.sampled_from(TOOL_NAMES)),
                "arguments": draw(ARGUMENTS),
            },
        }
        for offset in range(count)
    ]
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": draw(st.one_of(st.none(), contents(parts=False))),
        "tool_calls": calls,
    }
    answers = draw(st.permutations(calls))
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": draw(contents())}
        for call in answers
    ]
    return [assistant, *results]


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["system", "developer", "user", "assistant", "calls"]))
        if kind == "calls":
            messages += draw(tool_turn(len(messages) * 10))
        else:
            messages.append({"role": kind, "content": draw(contents())})
    return messages
