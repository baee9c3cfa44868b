"""The stream scanner's timing promises: what is passed on at once, what is held, and until when."""

from __future__ import annotations

import re

import pytest

from app.toolcalls.recovery import (
    MODES,
    Call,
    Reasoning,
    Text,
    TextCallScanner,
    new_call_id,
    recover,
    strip_reasoning,
)
from tests.unit.toolcalls.scanning import chunks, joined, scan

TOOLS = {"get_time": {"type": "object", "properties": {"tz": {"type": "string"}}}}
CALL_JSON = '{"name": "get_time", "arguments": {"tz": "UTC"}}'


def test_plain_text_flows_at_once() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("Hello ") == [Text("Hello ")]
    assert scanner.feed("world.") == [Text("world.")]
    assert scanner.finish() == []


def test_a_marker_prefix_is_held_until_decided() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("Hello <tool_") == [Text("Hello ")]
    assert scanner.feed("box> ok") == [Text("<tool_box> ok")]


def test_a_half_marker_at_the_end_is_text() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("Hello <tool_") == [Text("Hello ")]
    assert scanner.finish() == [Text("<tool_")]


def test_a_call_is_emitted_when_its_end_marker_arrives() -> None:
    scanner = TextCallScanner(TOOLS, "hermes")
    assert scanner.feed(f"<tool_call>{CALL_JSON}</tool_") == []
    assert scanner.feed("call>\n") == [Call("get_time", '{"tz": "UTC"}')]


def test_reasoning_streams_and_holds_a_partial_closing_tag() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("<thi") == []
    assert scanner.feed("nk>\nab") == [Reasoning("ab")]
    assert scanner.feed("c</thi") == [Reasoning("c")]
    assert scanner.feed("nk>\n\nHi") == [Text("Hi")]


def test_leading_whitespace_is_held_then_kept_for_text() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("\n ") == []
    assert scanner.feed("Hi") == [Text("\n Hi")]


def test_a_bracket_that_cannot_be_a_call_list_is_text_at_once() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert joined(scanner.feed("[1] see")) == [Text("[1] see")]


def test_a_call_list_is_held_to_the_end() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("[get_time(tz='UTC')]") == []
    assert scanner.finish() == [Call("get_time", '{"tz": "UTC"}')]


MISTRAL_TEXT = (
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "São Paulo", "unit": "celsius"}}, '
    '{"name": "get_time", "arguments": {"timezone": "America/Sao_Paulo"}}]'
)
MISTRAL_CALLS = [
    Call("get_weather", '{"city": "São Paulo", "unit": "celsius"}'),
    Call("get_time", '{"timezone": "America/Sao_Paulo"}'),
]


@pytest.mark.parametrize("mode", ["auto", "mistral"])
@pytest.mark.parametrize(
    "pieces",
    [
        [MISTRAL_TEXT],
        chunks(MISTRAL_TEXT, 1),
        chunks(MISTRAL_TEXT, 3),
        ["[TOOL_", MISTRAL_TEXT.removeprefix("[TOOL_")],
        ["[", MISTRAL_TEXT[1:]],
    ],
    ids=["whole", "1-char", "3-char", "marker-halves", "bracket-alone"],
)
def test_mistral_list_glued_to_its_marker_is_two_calls_at_any_split(
    mode: str, pieces: list[str]
) -> None:
    """Issue 20: under `auto`, a lone `[` was taken for a pythonic call list before
    `[TOOL_CALLS]` could match, and the calls came out as text."""
    assert scan(pieces, {"get_weather": {}, "get_time": {}}, mode) == MISTRAL_CALLS


def test_a_marker_prefix_holds_a_shorter_anchored_start() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed("[TOOL") == []
    assert joined([*scanner.feed("S] to use"), *scanner.finish()]) == [Text("[TOOLS] to use")]


def test_a_bare_json_answer_is_held_and_given_back_as_text() -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert scanner.feed('{"answer": ') == []
    assert scanner.feed("42}") == []
    assert scanner.finish() == [Text('{"answer": 42}')]


def test_an_object_that_does_not_open_with_a_key_is_text_at_once() -> None:
    scanner = TextCallScanner(TOOLS, "json")
    assert joined(scanner.feed("{name} is a placeholder")) == [Text("{name} is a placeholder")]


@pytest.mark.parametrize(
    "text", ["Wrap it in <tool_call> tags, then ", "Write <function=my tool> like "]
)
def test_prose_that_names_a_tag_is_text_at_once(text: str) -> None:
    scanner = TextCallScanner(TOOLS, "auto")
    assert joined(scanner.feed(text)) == [Text(text)]


def test_after_a_failed_call_the_rest_is_text() -> None:
    scanner = TextCallScanner(TOOLS, "hermes")
    events = scanner.feed("<tool_call>{bad}</tool_call> <tool_call>")
    assert events == [Text("<tool_call>{bad}</tool_call>"), Text(" <tool_call>")]


def test_mode_off_only_splits_reasoning() -> None:
    scanner = TextCallScanner(TOOLS, "off")
    assert scanner.feed(f"<think>x</think>[TOOL_CALLS]{CALL_JSON}") == [
        Reasoning("x"),
        Text(f"[TOOL_CALLS]{CALL_JSON}"),
    ]


def test_no_offered_tools_means_no_calls() -> None:
    assert recover(f"<tool_call>{CALL_JSON}</tool_call>", {}, "auto").calls == []


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown tool_calls\.recover mode"):
        TextCallScanner(TOOLS, "harmony")


def test_modes_are_the_contracts() -> None:
    assert set(MODES) == {
        *("off", "auto", "hermes", "qwen_xml", "mistral", "llama"),
        *("pythonic", "deepseek", "kimi", "json"),
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello", (None, "Hello")),
        ("<think>\nplan\n</think>\n\nHello", ("plan\n", "Hello")),
        ("<think>\n\n</think>\n\nHello", (None, "Hello")),
        ("  <think>cut off", ("cut off", "")),
        ("Hi <think>x</think>", (None, "Hi <think>x</think>")),
        ("<thin", (None, "<thin")),
    ],
)
def test_strip_reasoning(text: str, expected: tuple[str | None, str]) -> None:
    assert strip_reasoning(text) == expected


def test_call_ids_are_call_and_24_alphanumerics() -> None:
    ids = {new_call_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", call_id) for call_id in ids)
