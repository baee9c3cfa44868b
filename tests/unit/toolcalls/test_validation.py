"""Each class and each violation kind, on a table of schemas and arguments, and the cache."""

from __future__ import annotations

from typing import Any

import pytest

from app.toolcalls.validation import Validators

INTENT = {
    "type": "object",
    "properties": {
        "workspace_id": {"type": "string", "enum": ["sales", "support"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string", "minLength": 3},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "mode": {"const": "fast"},
        "pattern": {"type": "string", "pattern": "^[a-z]+$"},
    },
    "required": ["workspace_id", "confidence"],
}
PYDANTIC = {
    "$defs": {
        "Row": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
    },
    "type": "object",
    "properties": {
        "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}
TOOLS: dict[str, Any] = {"classify": INTENT, "load": PYDANTIC, "ping": None}


@pytest.mark.parametrize(
    ("name", "arguments", "result", "kinds"),
    [
        ("classify", '{"workspace_id": "sales", "confidence": 0.5}', "ok", []),
        ("load", '{"rows": [{"name": "a"}], "note": null}', "ok", []),
        ("ping", '{"anything": [1]}', "ok", []),
        ("ping", "", "ok", []),
        ("classify", '{"workspace_id": "sales", "confidence": 0.5', "invalid_json", []),
        ("classify", "{'workspace_id': 'sales'}", "invalid_json", []),
        ("lookup", "{}", "unknown_name", []),
        ("classify", '{"confidence": 0.5}', "schema_mismatch", ["missing_required"]),
        ("classify", '{"workspace_id": "hr", "confidence": 0.5}', "schema_mismatch", ["enum"]),
        ("classify", '{"workspace_id": "sales", "confidence": 1.5}', "schema_mismatch", ["range"]),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": "high"}',
            "schema_mismatch",
            ["type"],
        ),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": 0, "reasoning": "x"}',
            "schema_mismatch",
            ["range"],
        ),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": 0, "tags": "a"}',
            "schema_mismatch",
            ["type"],
        ),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": 0, "tags": ["a","b","c"]}',
            "schema_mismatch",
            ["range"],
        ),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": 0, "mode": "slow"}',
            "schema_mismatch",
            ["enum"],
        ),
        (
            "classify",
            '{"workspace_id": "sales", "confidence": 0, "pattern": "A1"}',
            "schema_mismatch",
            ["other"],
        ),
        ("classify", "[]", "schema_mismatch", ["type"]),
        ("ping", '"text"', "schema_mismatch", ["type"]),
        ("load", '{"rows": [{"nom": "a"}]}', "schema_mismatch", ["missing_required"]),
        ("load", '{"note": 3}', "schema_mismatch", ["other"]),
    ],
)
def test_classes_and_violation_kinds(
    name: str, arguments: str, result: str, kinds: list[str]
) -> None:
    verdict = Validators().classify(name, arguments, TOOLS)
    assert verdict.result == result
    assert sorted(violation.kind for violation in verdict.violations) == kinds
    assert (verdict.message == "") == (result == "ok")
    if result != "ok":
        assert verdict.message.startswith(f"{name}: ")


def test_a_mismatch_names_the_tool_and_the_field() -> None:
    verdict = Validators().classify("load", '{"rows": [{"name": 1}]}', TOOLS)
    (violation,) = verdict.violations
    assert violation.path == "rows/0/name"
    assert violation.kind == "type"
    assert verdict.message == 'load: "rows/0/name": 1 is not of type "string".'


def test_several_violations_are_all_reported() -> None:
    verdict = Validators().classify("classify", '{"workspace_id": "hr", "confidence": 2}', TOOLS)
    assert sorted(violation.kind for violation in verdict.violations) == ["enum", "range"]
    assert '"workspace_id"' in verdict.message
    assert '"confidence"' in verdict.message


def test_an_unknown_name_lists_the_offered_tools() -> None:
    verdict = Validators().classify("lookup", "{}", TOOLS)
    assert (
        verdict.message
        == "lookup: no tool of that name was offered (offered: classify, load, ping)."
    )


def test_each_distinct_schema_is_compiled_once_and_the_cache_is_bounded() -> None:
    validators = Validators(size=2)
    first = validators.validator({"type": "object", "required": ["a"]})
    assert validators.validator({"required": ["a"], "type": "object"}) is first  # key order
    validators.validator({"type": "object", "required": ["b"]})
    validators.validator({"type": "object", "required": ["c"]})
    assert len(validators) == 2
    assert validators.validator({"type": "object", "required": ["a"]}) is not first


@pytest.mark.parametrize(
    "schema",
    [{"type": "bogus"}, {"$ref": "https://example.com/schema.json"}, {"minimum": "x"}],
)
def test_a_schema_that_cannot_be_compiled_checks_json_only(schema: dict[str, Any]) -> None:
    """Nothing is fetched and nothing crashes: there is no rule to hold the call to."""
    validators = Validators()
    assert validators.classify("t", '{"a": 1}', {"t": schema}).result == "ok"
    assert validators.classify("t", '{"a": 1', {"t": schema}).result == "invalid_json"
