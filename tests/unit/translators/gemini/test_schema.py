"""JSON Schema -> Gemini Schema: the result is what Gemini documents (every node passes the
rules its 400s state, tests/helpers/gemini_rules.py) and keeps the meaning Gemini can hold."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.errors import InvalidRequest
from app.translators.gemini.schema import function_parameters, gemini_schema
from tests.helpers.gemini_rules import schema_problems

PARAM = "tools[0].function.parameters"

# What MCP servers and pydantic commonly send: $defs/$ref, Optional[...] as anyOf-with-null,
# Literal[...] as const, additionalProperties: false everywhere, a $schema at the root.
TOOL_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "minLength": 1},
                "zip": {"type": ["string", "null"], "pattern": "^[0-9]{5}$"},
            },
            "required": ["street", "zip"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "kind": {"const": "person", "description": "Always 'person'."},
        "name": {"type": "string", "title": "Name"},
        "home": {"$ref": "#/$defs/Address", "description": "Where they live."},
        "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["kind", "name", "home"],
}

ADDRESS = {
    "type": "OBJECT",
    "properties": {
        "street": {"type": "STRING", "minLength": 1},
        "zip": {"type": "STRING", "pattern": "^[0-9]{5}$", "nullable": True},
    },
    "required": ["street", "zip"],
}


def test_a_typical_tool_schema_becomes_what_gemini_documents() -> None:
    converted = gemini_schema(TOOL_SCHEMA, PARAM)

    assert converted == {
        "type": "OBJECT",
        "properties": {
            "kind": {"type": "STRING", "enum": ["person"], "description": "Always 'person'."},
            "name": {"type": "STRING", "title": "Name"},
            "home": {**ADDRESS, "description": "Where they live."},
            "work": {**ADDRESS, "default": None, "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 3},
        },
        "required": ["kind", "name", "home"],
    }
    assert schema_problems(converted, "parameters", root=True) == []


def test_the_callers_schema_is_not_modified() -> None:
    original = copy.deepcopy(TOOL_SCHEMA)
    gemini_schema(TOOL_SCHEMA, PARAM)
    assert original == TOOL_SCHEMA


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {"type": ["integer", "null"]}, {"type": "INTEGER", "nullable": True}, id="type-list"
        ),
        pytest.param(
            {"anyOf": [{"type": "null"}, {"type": "string", "format": "date-time"}]},
            {"type": "STRING", "format": "date-time", "nullable": True},
            id="anyOf-null-first",
        ),
        pytest.param(
            {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True},
            id="oneOf-with-null",
        ),
        pytest.param(
            {"type": ["string", "integer"], "minLength": 2, "maximum": 9, "description": "id"},
            {
                "anyOf": [{"type": "STRING", "minLength": 2}, {"type": "INTEGER", "maximum": 9}],
                "description": "id",
            },
            id="multi-type",
        ),
        pytest.param(
            {"enum": ["a", None]},
            {"type": "STRING", "enum": ["a"], "nullable": True},
            id="enum-null",
        ),
        pytest.param({"type": "null"}, {"type": "STRING", "nullable": True}, id="only-null"),
        pytest.param(
            {"type": "string", "nullable": True},
            {"type": "STRING", "nullable": True},
            id="openapi-nullable",
        ),
    ],
)
def test_null_becomes_nullable(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    converted = gemini_schema(schema, PARAM)
    assert converted == expected
    assert schema_problems(converted, "schema") == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            {"type": "INTEGER", "minimum": 1, "maximum": 9},
            id="exclusive-integer-bounds-are-exact",
        ),
        pytest.param(
            {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
            {
                "type": "NUMBER",
                "minimum": 0,
                "description": "Must be greater than 0. Must be a multiple of 0.5.",
            },
            id="exclusive-number-bound-described",
        ),
        pytest.param(
            {"type": "number", "minimum": 1, "exclusiveMinimum": True},
            {"type": "NUMBER", "minimum": 1, "description": "Must be greater than 1."},
            id="draft-04-exclusive-flag",
        ),
        pytest.param(
            {"type": "string", "format": "email", "description": "Contact."},
            {"type": "STRING", "description": "Contact. Format: email."},
            id="unsupported-format-described",
        ),
        pytest.param(
            {"type": "integer", "format": "int64"},
            {"type": "INTEGER", "format": "int64"},
            id="supported-format-kept",
        ),
        pytest.param(
            {"type": "integer", "enum": [1, 2, 3]},
            {"type": "INTEGER", "description": "One of: 1, 2, 3."},
            id="numeric-enum-described-type-kept",
        ),
        pytest.param(
            {"const": 5}, {"type": "INTEGER", "description": "Must be 5."}, id="numeric-const"
        ),
        pytest.param(
            {"const": True}, {"type": "BOOLEAN", "description": "Must be true."}, id="bool-const"
        ),
        pytest.param(
            {"type": "array", "uniqueItems": True, "items": {"type": "integer"}},
            {
                "type": "ARRAY",
                "items": {"type": "INTEGER"},
                "description": "Items must be unique.",
            },
            id="unique-items-described",
        ),
        pytest.param(
            {"type": "string", "examples": ["Paris", "Tokyo"]},
            {"type": "STRING", "example": "Paris"},
            id="first-example-kept",
        ),
    ],
)
def test_what_gemini_cannot_express_is_kept_in_words(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    converted = gemini_schema(schema, PARAM)
    assert converted == expected
    assert schema_problems(converted, "schema") == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({}, {"type": "STRING"}, id="open-schema-gets-a-type"),
        pytest.param({"type": "array"}, {"type": "ARRAY", "items": {"type": "STRING"}}, id="items"),
        pytest.param(
            {"properties": {"a": {"type": "boolean"}}},
            {"type": "OBJECT", "properties": {"a": {"type": "BOOLEAN"}}},
            id="type-inferred-from-properties",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {}}, "required": ["a", "b", "a"]},
            {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "required": ["a"]},
            id="required-only-names-properties",
        ),
        pytest.param(
            {"type": "string", "properties": {"x": {}}, "items": {}, "minimum": 3},
            {"type": "STRING"},
            id="keywords-of-other-types-dropped",
        ),
        pytest.param(
            {"type": "object", "patternProperties": {"^x": {}}, "propertyNames": {"maxLength": 3}},
            {"type": "OBJECT"},
            id="unknown-keywords-dropped",
        ),
        pytest.param(
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            {"type": "ARRAY", "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}},
            id="tuple-items",
        ),
        pytest.param(
            {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
                ]
            },
            {
                "type": "OBJECT",
                "properties": {"a": {"type": "STRING"}, "b": {"type": "INTEGER"}},
                "required": ["b"],
            },
            id="allOf-merged",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            },
            {
                "anyOf": [
                    {
                        "type": "OBJECT",
                        "properties": {"a": {"type": "STRING"}, "b": {"type": "STRING"}},
                        "required": [name],
                    }
                    for name in ("a", "b")
                ]
            },
            id="anyOf-siblings-apply-to-each-branch",
        ),
        pytest.param(
            {"type": "object", "properties": {"gone": False, "kept": True}},
            {"type": "OBJECT", "properties": {"kept": {"type": "STRING"}}},
            id="boolean-property-schemas",
        ),
    ],
)
def test_edge_cases_pass_geminis_rules(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    converted = gemini_schema(schema, PARAM)
    assert converted == expected
    assert schema_problems(converted, "schema") == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"$ref": 7, "type": "string"}, {"type": "STRING"}, id="non-string-ref"),
        pytest.param(
            {"anyOf": [{"type": "null"}, {"const": None}]},
            {"type": "STRING", "nullable": True},
            id="only-null-branches",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {}}, "required": ["b"]},
            {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
            id="required-naming-nothing",
        ),
        pytest.param(
            {"type": "number", "exclusiveMaximum": 2.5},
            {"type": "NUMBER", "maximum": 2.5, "description": "Must be less than 2.5."},
            id="exclusive-maximum",
        ),
        pytest.param(
            {"type": ["boolean"], "const": None},
            {"type": "BOOLEAN", "nullable": True},
            id="const-null",
        ),
        pytest.param({"const": 0.5}, {"type": "NUMBER", "description": "Must be 0.5."}, id="float"),
        pytest.param(
            {"enum": [{"a": 1}]}, {"type": "OBJECT", "description": 'Must be {"a":1}.'}, id="object"
        ),
        pytest.param(
            {"type": "string", "example": "x", "examples": ["y"]},
            {"type": "STRING", "example": "x"},
            id="example-wins-over-examples",
        ),
    ],
)
def test_more_edge_cases(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    converted = gemini_schema(schema, PARAM)
    assert converted == expected
    assert schema_problems(converted, "schema") == []


def test_refs_nest_and_chain() -> None:
    schema = {
        "definitions": {
            "Id": {"type": "string"},
            "Pair": {"type": "array", "items": {"$ref": "#/definitions/Id"}},
        },
        "type": "object",
        "properties": {
            "pair": {"$ref": "#/definitions/Pair"},
            "alias": {"$ref": "#/definitions/Id"},
        },
    }
    assert gemini_schema(schema, PARAM)["properties"] == {
        "pair": {"type": "ARRAY", "items": {"type": "STRING"}},
        "alias": {"type": "STRING"},
    }


def test_the_same_ref_twice_side_by_side_is_not_recursion() -> None:
    schema = {
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}},
    }
    converted = gemini_schema(schema, PARAM)
    assert converted["properties"]["a"] == converted["properties"]["b"]


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                        },
                    }
                },
                "$ref": "#/$defs/Node",
            },
            id="tree",
        ),
        pytest.param({"type": "object", "properties": {"self": {"$ref": "#"}}}, id="root"),
    ],
)
def test_a_recursive_ref_is_refused_by_name(schema: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest) as caught:
        gemini_schema(schema, PARAM)
    assert caught.value.param == PARAM
    assert "refers to itself" in caught.value.message
    assert "gemini" in caught.value.message


@pytest.mark.parametrize(
    "parameters",
    [None, {}, {"type": "object"}, {"type": "object", "properties": {}}],
)
def test_parameterless_functions_send_no_parameters(parameters: Any) -> None:
    # Gemini: "parameters.properties: should be non-empty for OBJECT type" (C.3).
    assert function_parameters(parameters, PARAM) is None


def test_parameters_with_properties_are_converted() -> None:
    parameters = function_parameters({"type": "object", "properties": {"q": {}}}, PARAM)
    assert parameters == {"type": "OBJECT", "properties": {"q": {"type": "STRING"}}}
