"""What counts as a call and how raw values become arguments, format by format."""

from __future__ import annotations

from typing import Any

import pytest

from app.toolcalls.recovery import recover
from app.toolcalls.recovery.json_calls import call_from_object, load_values
from app.toolcalls.recovery.qwen_xml import convert

TOOLS = {"f": {"type": "object", "properties": {"x": {}}}}


@pytest.mark.parametrize(
    ("raw", "declared", "expected"),
    [
        ("3", "integer", 3),
        ("3.5", "integer", "3.5"),
        ("true", "integer", "true"),
        ("1", "number", 1),
        ("2.5", "number", 2.5),
        ("true", "boolean", True),
        ("True", "boolean", True),
        ("1", "boolean", "1"),
        ('{"a": 1}', "object", {"a": 1}),
        ("{'a': 1}", "object", {"a": 1}),
        ("not json", "object", "not json"),
        ("[1, 2]", "array", [1, 2]),
        ("null", "integer", None),
        ("null", "string", "null"),
        (" 7 ", None, " 7 "),
        ("7", "weird", "7"),
    ],
)
def test_qwen_xml_values_follow_the_declared_type(raw: str, declared: str, expected: Any) -> None:
    assert convert(raw, declared) == expected


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        ({"name": "f", "arguments": {"x": 1}}, ("f", {"x": 1})),
        ({"name": "f", "parameters": {}}, ("f", {})),
        ({"type": "function", "name": "f", "parameters": {}}, ("f", {})),
        ({"type": "function", "function": {"name": "f", "arguments": "{}"}}, ("f", {})),
        ({"name": "f"}, None),
        ({"name": "f", "arguments": {}, "parameters": {}}, None),
        ({"name": "f", "arguments": [1]}, None),
        ({"name": "f", "arguments": "not json"}, None),
        ({"name": "f", "arguments": {}, "extra": 1}, None),
        ({"type": "tool", "name": "f", "arguments": {}}, None),
        ({"answer": 42}, None),
        ([1], None),
    ],
)
def test_what_json_is_a_call(candidate: Any, expected: Any) -> None:
    assert call_from_object(candidate) == expected


def test_json_values_run_with_semicolons() -> None:
    assert load_values('{"a": 1}; {"b": 2}\n') == [{"a": 1}, {"b": 2}]
    assert load_values('{"a": 1} trailing') is None


@pytest.mark.parametrize(
    "text",
    [
        "[f(x={1, 2})]",
        "[f(x=1e999)]",
        "[f(x=b'raw')]",
        "[f(**kw)]",
        "[f(x=y)]",
        "[f(x=1), 2]",
        "[]",
        "[f(x=1)] and more",
    ],
)
def test_pythonic_that_is_not_json_or_not_calls_stays_text(text: str) -> None:
    result = recover(text, TOOLS, "pythonic")
    assert (result.content, result.calls) == (text, [])


def test_pythonic_dotted_names_are_kept_whole() -> None:
    result = recover("[ns.f(x=1)]", {"ns.f": {}}, "auto")
    assert [call.name for call in result.calls] == ["ns.f"]
