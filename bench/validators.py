"""Which JSON Schema library validates tool calls: jsonschema-rs, fastjsonschema or jsonschema,
on the shapes agents send (intent classification, table selection, SQL generation, a
pydantic-style schema with $defs/$ref and anyOf-null), timed per call with a warm (compiled)
validator, JSON parsing of the arguments included. Run: python bench/validators.py"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable
from typing import Any

import fastjsonschema
import jsonschema
import jsonschema_rs
import orjson

TABLES = ["orders", "customers", "products", "payments", "shipments"]
SCHEMAS: dict[str, dict[str, Any]] = {
    "intent": {
        "type": "object",
        "properties": {
            "workspace_id": {"type": "string", "enum": ["sales", "support", "finance"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reasoning": {"type": "string"},
        },
        "required": ["workspace_id", "confidence", "reasoning"],
    },
    "tables": {
        "type": "object",
        "properties": {
            "relevant_tables": {"type": "array", "items": {"type": "string", "enum": TABLES}},
        },
        "required": ["relevant_tables"],
    },
    "sql": {
        "type": "object",
        "properties": {
            "sql_query": {"type": "string"},
            "explanation": {"type": "string"},
            "tables_used": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["sql_query", "explanation", "tables_used"],
    },
    "pydantic": {
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["city"],
            }
        },
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "home": {"$ref": "#/$defs/Address"},
            "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
        },
        "required": ["name", "home"],
    },
}
VALID = {
    "intent": {"workspace_id": "sales", "confidence": 0.82, "reasoning": "asks about revenue"},
    "tables": {"relevant_tables": ["orders", "customers"]},
    "sql": {
        "sql_query": "SELECT c.name, SUM(o.total) FROM orders o JOIN customers c ON c.id = "
        "o.customer_id GROUP BY c.name ORDER BY 2 DESC LIMIT 10",
        "explanation": "Top customers by revenue.",
        "tables_used": ["orders", "customers"],
    },
    "pydantic": {"name": "Ada", "home": {"city": "London", "zip": "N1"}, "work": None},
}
INVALID = {
    "intent": {"workspace_id": "marketing", "confidence": 1.4},
    "tables": {"relevant_tables": "orders"},
    "sql": {"sql_query": "SELECT 1", "tables_used": "orders"},
    "pydantic": {"name": "Ada", "home": {"zip": 1}},
}


def rs_checker(schema: dict[str, Any]) -> Callable[[str], Any]:
    validator = jsonschema_rs.validator_for(schema, offline=True)

    def check(arguments: str) -> Any:
        instance = orjson.loads(arguments)
        if validator.is_valid(instance):
            return []
        return [(e.kind, list(e.instance_path)) for e in validator.iter_errors(instance)]

    return check


def fast_checker(schema: dict[str, Any]) -> Callable[[str], Any]:
    validate = fastjsonschema.compile(schema)

    def check(arguments: str) -> Any:
        try:
            validate(orjson.loads(arguments))
        except fastjsonschema.JsonSchemaValueException as exc:
            return [(exc.rule, exc.path)]  # the first error only
        return []

    return check


def py_checker(schema: dict[str, Any]) -> Callable[[str], Any]:
    validator = jsonschema.validators.validator_for(schema)(schema)

    def check(arguments: str) -> Any:
        instance = orjson.loads(arguments)
        return [(e.validator, list(e.absolute_path)) for e in validator.iter_errors(instance)]

    return check


LIBRARIES = {"jsonschema-rs": rs_checker, "fastjsonschema": fast_checker, "jsonschema": py_checker}


def per_call_us(statement: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6


def say(*lines: str) -> None:
    """Results go to stdout as Markdown rows."""
    sys.stdout.write("\n".join(lines) + "\n")


def main() -> None:
    rows = []
    for library, make in LIBRARIES.items():
        for shape, schema in SCHEMAS.items():
            compile_us = per_call_us(lambda s=schema, m=make: m(s), 50)  # type: ignore[misc]
            check = make(schema)
            valid, invalid = json.dumps(VALID[shape]), json.dumps(INVALID[shape])
            valid_us = per_call_us(lambda c=check, v=valid: c(v), 2000)  # type: ignore[misc]
            invalid_us = per_call_us(lambda c=check, i=invalid: c(i), 2000)  # type: ignore[misc]
            rows.append((library, shape, compile_us, valid_us, invalid_us, len(check(invalid))))
    say("| library | schema | compile µs | valid call µs | invalid call µs | errors found |")
    say("| --- | --- | ---: | ---: | ---: | ---: |")
    for library, shape, compile_us, valid_us, invalid_us, errors in rows:
        figures = f"{compile_us:.0f} | {valid_us:.1f} | {invalid_us:.1f} | {errors}"
        say(f"| {library} | {shape} | {figures} |")


if __name__ == "__main__":
    main()
