"""Seeded random texts built from marker pieces, in every mode: the events never depend on the
split, and when no call is recovered the text comes back exactly as written."""

from __future__ import annotations

import random

import pytest

from app.toolcalls.recovery import MODES, Call, Text, deepseek
from tests.unit.toolcalls.scanning import scan, splits

PIECES = (
    *("<tool_call>", "</tool_call>", "<tool_", "<think>", "</think>", "</thi", "\n", " ", "Hi"),
    *('{"name": "f", "arguments": {"a": 1}}', '{"name": "g", "parameters": {}}', "; ", "[", "]"),
    *("{", "}", "[TOOL_CALLS]", "[TOOL_", "f", "(a=1)", "[f(a=1)]", "<|python_tag|>", "f>"),
    *("<function=", "</function>", "<parameter=a>", "1", "</parameter>", "```json", "```"),
    *(deepseek.CALLS_BEGIN, deepseek.CALL_BEGIN, deepseek.SEPARATOR, deepseek.CALL_END),
    *(deepseek.CALLS_END, "function", "<|tool_calls_section_begin|>", "<|tool_call_begin|>"),
    *("functions.f:0", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|", '"'),
    "<|tool_calls_section_end|>",
)
TOOLS = {"f": {"type": "object", "properties": {"a": {"type": "integer"}}}, "g": {}}


def random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 12))) for _ in range(count)]


@pytest.mark.parametrize("mode", MODES)
def test_random_texts_give_the_same_events_at_every_split(mode: str) -> None:
    for number, text in enumerate(random_texts(seed=len(mode), count=60)):
        whole = scan([text], TOOLS, mode)
        for pieces in splits(text, seed=f"{mode}{number}"):
            assert scan(pieces, TOOLS, mode) == whole, (text, pieces)


@pytest.mark.parametrize("mode", MODES)
def test_text_without_calls_or_reasoning_comes_back_whole(mode: str) -> None:
    for text in random_texts(seed=7 + len(mode), count=300):
        events = scan([text], TOOLS, mode)
        if any(isinstance(event, Call) for event in events) or text.lstrip().startswith("<think>"):
            continue
        assert "".join(event.text for event in events if isinstance(event, Text)) == text
