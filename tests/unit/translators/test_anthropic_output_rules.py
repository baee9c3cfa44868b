"""The validating Anthropic mock's output and tool-declaration rules
(tests/helpers/anthropic_output_rules.py): what it takes and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.anthropic_output_rules import (
    BAD_SCHEMA,
    BOTH_FORMATS,
    DUPLICATE_TOOLS,
    FORMAT_TYPE,
    NO_SCHEMA,
    NOT_AN_OBJECT,
    output_problems,
)

SCHEMA = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}
TOOL = {"name": "json_response", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"output_config": {"effort": "low"}},
        {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}},
        {"tools": [TOOL], "tool_choice": {"type": "tool", "name": "json_response"}},
    ],
)
def test_what_anthropic_takes_passes(body: dict[str, Any]) -> None:
    assert output_problems(body) == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"output_config": "json"}, NOT_AN_OBJECT),
        ({"output_config": {"format": {"type": "json_object"}}}, FORMAT_TYPE),
        ({"output_config": {"format": {"type": "json_schema"}}}, NO_SCHEMA),
        ({"output_config": {"format": {"type": "json_schema", "schema": []}}}, BAD_SCHEMA),
        (
            {
                "output_format": {"type": "json_schema", "schema": SCHEMA},
                "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
            },
            BOTH_FORMATS,
        ),
        ({"tools": [TOOL, TOOL]}, DUPLICATE_TOOLS),
        ({"tools": [TOOL], "tool_choice": {"type": "tool", "name": "f"}}, "Tool 'f' not found"),
    ],
)
def test_what_anthropic_refuses_is_refused(body: dict[str, Any], problem: str) -> None:
    assert any(problem in line for line in output_problems(body))
