"""Seeded random texts built from marker pieces, in every mode: the events never depend on the
split, and when no call is recovered the text comes back exactly as written."""

from __future__ import annotations

import random
from typing import NamedTuple

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


def random_texts(seed: str, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(1, 12))) for _ in range(count)]


@pytest.mark.parametrize("mode", MODES)
def test_random_texts_give_the_same_events_at_every_split(mode: str) -> None:
    for number, text in enumerate(random_texts(seed=f"split-{mode}", count=60)):
        whole = scan([text], TOOLS, mode)
        for pieces in splits(text, seed=f"{mode}{number}"):
            assert scan(pieces, TOOLS, mode) == whole, (text, pieces)


@pytest.mark.parametrize("mode", MODES)
def test_text_without_calls_or_reasoning_comes_back_whole(mode: str) -> None:
    for text in random_texts(seed=f"whole-{mode}", count=300):
        events = scan([text], TOOLS, mode)
        if any(isinstance(event, Call) for event in events) or text.lstrip().startswith("<think>"):
            continue
        assert "".join(event.text for event in events if isinstance(event, Text)) == text


DS, KIMI = deepseek, "<|tool_calls_section_begin|><|tool_call_begin|>functions."
F1, G0 = '{"name": "f", "arguments": {"a": 1}}', '{"name": "g", "arguments": {}}'
P1, P0 = '{"name": "f", "parameters": {"a": 1}}', '{"name": "g", "parameters": {}}'
XML = "<function=f><parameter=a>2</parameter></function><function=g></function>"


class Sample(NamedTuple):
    """A format's call text, the names of the calls it holds, and what may surround it
    (formats without an end marker run to the end; anchored ones must open the answer)."""

    mode: str
    text: str
    names: str
    lead: bool = True
    follow: bool = True


SAMPLES = (
    Sample("hermes", f"<tool_call>\n{F1}\n</tool_call>", "f"),
    Sample("hermes", f"<tool_call>{F1}</tool_call>\n<tool_call>{G0}</tool_call>", "fg"),
    Sample(
        "qwen_xml",
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
        "f",
    ),
    Sample("qwen_xml", XML, "fg"),
    Sample("mistral", f"[TOOL_CALLS][{F1}, {G0}]", "fg", follow=False),
    Sample("mistral", f"[TOOL_CALLS] [{F1}]", "f", follow=False),
    Sample("mistral", '[TOOL_CALLS]f{"a": 1}[TOOL_CALLS]g[ARGS]{}', "fg", follow=False),
    Sample("llama", f"<|python_tag|>{P1}; {P0}", "fg", follow=False),
    Sample("llama", f"{P1}; {P0}", "fg", lead=False, follow=False),
    Sample("llama", '<function=f>{"a": 1}</function>', "f"),
    Sample("pythonic", "[f(a=1), g()]", "fg", lead=False, follow=False),
    Sample("pythonic", "[ f(a=1) ]", "f", lead=False, follow=False),
    Sample(
        "deepseek",
        f"{DS.CALLS_BEGIN}{DS.CALL_BEGIN}function{DS.SEPARATOR}f\n```json\n"
        f'{{"a": 1}}\n```{DS.CALL_END}{DS.CALLS_END}',
        "f",
    ),
    Sample(
        "deepseek",
        f'{DS.CALLS_BEGIN}{DS.CALL_BEGIN}f{DS.SEPARATOR}{{"a": 1}}{DS.CALL_END}'
        f"{DS.CALL_BEGIN}g{DS.SEPARATOR}{{}}{DS.CALL_END}{DS.CALLS_END}",
        "fg",
    ),
    Sample(
        "kimi",
        f'{KIMI}f:0<|tool_call_argument_begin|>{{"a": 1}}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        "f",
    ),
    Sample("json", '{"type": "function", "name": "f", "parameters": {"a": 1}}', "f", False, False),
    Sample("json", f"```json\n{F1}\n```", "f", lead=False),
)
LEADS = ("", "\n", "<think>plan [f(a=2)]</think>\n")
PROSE = "Sure [1]: "
TAILS = ("\n", " Done [2].")


def framed(sample: Sample, rng: random.Random) -> str:
    """The call text with what an answer may put around it: reasoning, prose, a tail."""
    lead = rng.choice(LEADS) + (PROSE if sample.lead and rng.random() < 0.5 else "")
    return lead + sample.text + (rng.choice(TAILS) if sample.follow else "")


def test_there_is_a_sample_for_every_format() -> None:
    assert {sample.mode for sample in SAMPLES} == set(MODES) - {"off", "auto"}


@pytest.mark.parametrize("under", ["own", "auto"])
@pytest.mark.parametrize(
    "sample", SAMPLES, ids=[f"{sample.mode}-{number}" for number, sample in enumerate(SAMPLES)]
)
def test_every_format_streams_the_calls_it_gives_whole_under_its_mode_and_auto(
    sample: Sample, under: str
) -> None:
    """The reference is the format's own mode, non-stream: its own mode and `auto`, streamed
    at any split (one, two or three characters a delta, every cut, random cuts), must give
    the same events. `auto` looks for every format at once, so a shorter start of one format
    (`[`) must not pre-empt a longer one of another (`[TOOL_CALLS]`) mid-stream."""
    rng = random.Random(sample.text)
    scanned = sample.mode if under == "own" else "auto"
    for variant in range(4):
        answer = framed(sample, rng) if variant else sample.text
        whole = scan([answer], TOOLS, sample.mode)
        assert "".join(event.name for event in whole if isinstance(event, Call)) == sample.names
        for pieces in splits(answer, seed=f"{scanned}{variant}"):
            assert scan(pieces, TOOLS, scanned) == whole, (answer, pieces)
