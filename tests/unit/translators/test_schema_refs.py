"""schema_refs: the jsonschema check anchored at a root, local `$ref` lookup, schema merging."""

from __future__ import annotations

from typing import Any

import pytest

from app.translators.schema_refs import RootChecker, merge_schemas, resolve_ref

ROOT = {
    "$defs": {"n": {"type": "integer", "minimum": 5}},
    "properties": {"n": {"$ref": "#/$defs/n"}, "mail": {"type": "string", "format": "email"}},
}


@pytest.mark.parametrize(
    ("value", "schema", "fits"),
    [
        pytest.param(7, ROOT["properties"]["n"], True, id="ref-resolves-at-root"),
        pytest.param(2, ROOT["properties"]["n"], False, id="ref-target-applies"),
        pytest.param("not an email", ROOT["properties"]["mail"], True, id="format-not-asserted"),
        pytest.param(1, {"$ref": "#/$defs/missing"}, False, id="unresolvable-ref"),
        pytest.param(1, {"type": "text"}, False, id="unknown-type"),
        pytest.param({"n": 9}, ROOT, True, id="whole-root"),
    ],
)
def test_root_checker_fits(value: Any, schema: Any, fits: bool) -> None:
    assert RootChecker(ROOT).fits(value, schema) is fits


def test_root_checker_follows_schema_keyword() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#"}
    schema = {"maximum": 1, "exclusiveMaximum": True}
    assert RootChecker(draft4).fits(1, schema) is False
    assert RootChecker(draft4).fits(0.5, schema) is True


def test_root_checker_on_a_root_it_cannot_take_fits_nothing() -> None:
    assert RootChecker(["not", "a", "schema"]).fits("x", {}) is False


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        pytest.param("#", "ROOT", id="root"),
        pytest.param("#/$defs/a~1b", {"type": "string"}, id="escaped-slash"),
        pytest.param("#/definitions/c", {"type": "integer"}, id="definitions"),
        pytest.param("#/$defs/missing", {}, id="missing"),
        pytest.param("https://example.com/schema", {}, id="remote"),
    ],
)
def test_resolve_ref(ref: str, expected: Any) -> None:
    root = {"$defs": {"a/b": {"type": "string"}}, "definitions": {"c": {"type": "integer"}}}
    assert resolve_ref(ref, root) == (root if expected == "ROOT" else expected)


def test_merge_schemas_tightens_and_unites() -> None:
    merged = merge_schemas(
        {"type": "number", "minimum": 1, "required": ["a"], "properties": {"a": {"minLength": 1}}},
        {"type": "integer", "minimum": 3, "required": ["b"], "properties": {"a": {"maxLength": 4}}},
    )
    assert merged == {
        "type": "integer",
        "minimum": 3,
        "required": ["a", "b"],
        "properties": {"a": {"minLength": 1, "maxLength": 4}},
    }


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param(False, {"type": "string"}, False, id="false-wins"),
        pytest.param(True, {"type": "string"}, {"type": "string"}, id="true-is-empty"),
        pytest.param({"type": "string"}, {}, {"type": "string"}, id="empty-second"),
    ],
)
def test_merge_schemas_boolean_schemas(first: Any, second: Any, expected: Any) -> None:
    assert merge_schemas(first, second) == expected
