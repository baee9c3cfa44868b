"""schema_sample: every sample of a realistic tool schema validates with `jsonschema`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from app.translators.demo.schema_sample import sample

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "weather": WEATHER,
    "search_enum_and_bounds": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "engine": {"enum": ["web", "news", "images"]},
            "limit": {"type": "integer", "minimum": 5, "maximum": 50},
            "page": {"type": "integer", "exclusiveMinimum": 0},
        },
        "required": ["query", "limit"],
        "additionalProperties": False,
    },
    "nested_objects": {
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "address": {
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                        "required": ["street"],
                    },
                },
                "required": ["name", "address"],
            }
        },
        "required": ["user"],
    },
    "array_of_objects": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 2,
                "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                    "required": ["sku", "qty"],
                },
            }
        },
        "required": ["items"],
    },
    "nullable_type_list": {
        "type": "object",
        "properties": {"note": {"type": ["null", "string"], "maxLength": 3}},
        "required": ["note"],
    },
    "any_of_nullable": {
        "type": "object",
        "properties": {"deadline": {"anyOf": [{"type": "null"}, {"type": "string"}]}},
        "required": ["deadline"],
    },
    "one_of_exclusive": {
        "type": "object",
        "properties": {
            "target": {
                "oneOf": [
                    {"type": "string"},
                    {"type": "string", "maxLength": 20},
                    {"type": "integer"},
                ]
            },
            "value": {"oneOf": [{"type": "number"}, {"type": "integer"}]},
        },
        "required": ["target"],
    },
    "one_of_objects": {
        "type": "object",
        "properties": {
            "shape": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                        "required": ["kind", "r"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                        "required": ["kind", "side"],
                    },
                ]
            }
        },
    },
    "ref_defs": {
        "type": "object",
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}},
                "required": ["lat"],
            }
        },
        "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"}},
        "required": ["from", "to"],
    },
    "recursive_ref": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name", "children"],
            }
        },
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "required": ["tree"],
    },
    "formats": {
        "type": "object",
        "properties": {
            name: {"type": "string", "format": name}
            for name in ("date-time", "date", "time", "email", "uri", "uuid", "ipv4")
        },
    },
    "patterns": {
        "type": "object",
        "properties": {
            "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "phone": {"type": "string", "pattern": r"^\+?[0-9]{7,15}$"},
            "slug": {"type": "string", "pattern": "^[a-z0-9]+(?:-[a-z0-9]+)*$", "minLength": 6},
            "ticket": {"type": "string", "pattern": r"^(BUG|FEAT)-\d{4}$"},
            "not_vowel": {"type": "string", "pattern": "^[^aeiou]{2}$"},
        },
        "required": ["currency", "phone", "slug", "ticket"],
    },
    "additional_properties_false": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    "empty_parameters": {},
    "object_without_properties": {"type": "object"},
    "strict_mode": {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "units": {"type": ["string", "null"], "enum": ["c", "f", None]},
        },
        "required": ["location", "units"],
        "additionalProperties": False,
    },
    "numbers_multiple_of": {
        "type": "object",
        "properties": {
            "step": {"type": "integer", "multipleOf": 5, "minimum": 12},
            "price": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "half": {"type": "integer", "multipleOf": 0.5, "maximum": -3},
        },
        "required": ["step", "price", "ratio", "half"],
    },
    "unique_items": {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 3,
                "uniqueItems": True,
            },
            "levels": {
                "type": "array",
                "items": {"enum": ["low", "mid", "high"]},
                "minItems": 3,
                "uniqueItems": True,
            },
            "ids": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 4,
                "uniqueItems": True,
            },
        },
        "required": ["tags", "levels", "ids"],
    },
    "prefix_items": {
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
            "bounded": {"type": "array", "items": {"type": "boolean"}, "maxItems": 0},
        },
        "required": ["pair"],
    },
    "all_of_merge": {
        "type": "object",
        "allOf": [
            {"properties": {"id": {"type": "string"}}, "required": ["id"]},
            {"properties": {"count": {"type": "integer", "minimum": 3}}, "required": ["count"]},
            {"properties": {"count": {"maximum": 4}}},
        ],
    },
    "defaults": {
        "type": "object",
        "properties": {
            "verbose": {"type": "boolean", "default": False},
            "retries": {"type": "integer", "default": 3, "minimum": 0},
            "bad_default": {"type": "integer", "default": "three"},
        },
    },
    "const_and_null": {
        "type": "object",
        "properties": {"version": {"const": 2}, "nothing": {"type": "null"}},
        "required": ["version", "nothing"],
    },
    "string_lengths": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "minLength": 12, "maxLength": 12},
            "short": {"type": "string", "maxLength": 2},
        },
        "required": ["code", "short"],
    },
    "min_properties_and_pattern_properties": {
        "type": "object",
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
        "minProperties": 2,
        "required": ["x-rate"],
    },
    "contains": {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": {"type": "string"}, "contains": {"const": "start"}}
        },
        "required": ["steps"],
    },
    "any_of_required_sets": {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"}, "phone": {"type": "string"}},
        "anyOf": [{"required": ["email"]}, {"required": ["phone"]}],
    },
    "typeless_keywords": {
        "type": "object",
        "properties": {
            "n": {"minimum": 10},
            "list": {"items": {"type": "integer"}, "minItems": 1},
            "anything": {},
            "yes": True,
        },
        "required": ["n", "list", "anything", "yes"],
    },
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_sample_validates(schema: dict[str, Any]) -> None:
    Draft202012Validator(schema).validate(sample(schema))


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_sample_validates_with_hint(schema: dict[str, Any]) -> None:
    Draft202012Validator(schema).validate(sample(schema, hint="What's the weather in New York?"))


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_sample_is_deterministic(schema: dict[str, Any]) -> None:
    assert sample(schema, hint="x y") == sample(schema, hint="x y")


def test_draft7_definitions_and_tuple_items() -> None:
    schema = {
        "definitions": {"unit": {"type": "string", "enum": ["m", "ft"]}},
        "type": "object",
        "properties": {
            "unit": {"$ref": "#/definitions/unit"},
            "range": {
                "type": "array",
                "items": [{"type": "number"}, {"type": "number"}],
                "additionalItems": False,
            },
            "flag": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        },
        "required": ["unit", "range"],
    }
    value = sample(schema)
    Draft7Validator(schema).validate({k: v for k, v in value.items() if k != "flag"})
    assert value["unit"] == "m"
    assert value["flag"] >= 1


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(None, {}, id="missing"),
        pytest.param({}, {}, id="empty"),
        pytest.param(True, {}, id="true"),
        pytest.param({"type": "object", "properties": {}}, {}, id="no-properties"),
    ],
)
def test_schema_that_allows_anything_gives_empty_object(schema: Any, expected: Any) -> None:
    assert sample(schema) == expected


def test_every_optional_property_is_included() -> None:
    assert set(sample(SCHEMAS["search_enum_and_bounds"])) == {"query", "engine", "limit", "page"}


def test_recursive_ref_terminates_with_minimal_children() -> None:
    assert sample(SCHEMAS["recursive_ref"]) == {
        "tree": {"name": "example", "children": [{"name": "example", "children": []}]}
    }


@pytest.mark.parametrize(
    ("name", "hint", "expected"),
    [
        pytest.param("city", "What's the weather in Paris?", "Paris", id="place-name"),
        pytest.param("location", "Weather in New York today", "New York", id="two-word-place"),
        pytest.param("city", "paris please", "paris please", id="no-capitals-whole-text"),
        pytest.param("query", "best ramen in Tokyo", "best ramen in Tokyo", id="free-text"),
        pytest.param("searchQuery", "ramen", "ramen", id="camel-case-name"),
        pytest.param("unit", "ramen", "example", id="unrelated-name"),
    ],
)
def test_hint_fills_matching_string_properties(name: str, hint: str, expected: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}
    assert sample(schema, hint=hint) == {name: expected}


@pytest.mark.parametrize(
    "constraint",
    [
        pytest.param({"maxLength": 3}, id="too-long-is-truncated"),
        pytest.param({"pattern": "^[0-9]+$"}, id="pattern"),
        pytest.param({"enum": ["a", "b"]}, id="enum"),
        pytest.param({"format": "email"}, id="format"),
        pytest.param({"minLength": 50}, id="too-short"),
    ],
)
def test_hint_is_only_used_where_it_fits(constraint: dict[str, Any]) -> None:
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", **constraint}},
        "required": ["query"],
    }
    value = sample(schema, hint="cheap flights")
    Draft202012Validator(schema).validate(value)
    if "maxLength" not in constraint:
        assert value["query"] != "cheap flights"


@pytest.mark.parametrize(
    "pattern",
    ["^[A-Z]{3}$", r"^\d{3}-\d{4}$", "^(red|green|blue)$", "^[a-f0-9]{8}$", r"^\w+@\w+\.com$"],
)
def test_patterns_give_full_matches(pattern: str) -> None:
    value = sample({"type": "object", "properties": {"p": {"type": "string", "pattern": pattern}}})
    assert re.fullmatch(pattern, value["p"])


def test_unsupported_pattern_falls_back_to_a_string() -> None:
    value = sample(
        {"type": "object", "properties": {"p": {"type": "string", "pattern": r"\p{L}+"}}}
    )
    assert isinstance(value["p"], str)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number"},  # Codex's exec_command types yield_time_ms so, and reads an integer
        {"type": ["number", "null"]},
        {"type": "number", "minimum": 250, "maximum": 30000},
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
        {"type": "number", "multipleOf": 5},
        {"minimum": 2.5},
    ],
)
def test_a_number_is_a_whole_number_unless_the_schema_asks_for_a_fraction(
    schema: dict[str, Any],
) -> None:
    value = sample({"type": "object", "properties": {"n": schema}, "required": ["n"]})["n"]
    assert type(value) is int, value
    Draft202012Validator(schema).validate(value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "multipleOf": 0.25},
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        {"type": "number", "minimum": 2.2, "maximum": 2.8},
    ],
)
def test_a_number_is_a_fraction_where_the_schema_asks_for_one(schema: dict[str, Any]) -> None:
    value = sample({"type": "object", "properties": {"n": schema}, "required": ["n"]})["n"]
    assert not float(value).is_integer(), value
    Draft202012Validator(schema).validate(value)
