"""Every tool call checked against the tool the client offered: `ok`, `invalid_json`,
`unknown_name` or `schema_mismatch`, with each mismatch's kind and field.

jsonschema-rs does the checking (bench/validators.py: 0.4-0.6 µs per valid call with the
JSON parse, every error with its keyword and path, drafts 4 to 2020-12, remote `$ref`s never
fetched; fastjsonschema reports only the first error and compiles by generating Python, ~0.6 ms
per schema; jsonschema took 17-53 µs per call). Agents send the same tools every turn, so each
distinct schema is compiled once and kept in a bounded cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema_rs
import orjson

Result = Literal["ok", "invalid_json", "unknown_name", "schema_mismatch"]
ViolationKind = Literal["missing_required", "type", "enum", "range", "other"]

# jsonschema-rs error kinds (class names of ValidationErrorKind) -> our violation kinds.
_KINDS: dict[str, ViolationKind] = {
    "Required": "missing_required",
    "Type": "type",
    "Enum": "enum",
    "Constant": "enum",
    **dict.fromkeys(
        (
            "Minimum",
            "Maximum",
            "ExclusiveMinimum",
            "ExclusiveMaximum",
            "MultipleOf",
            "MinLength",
            "MaxLength",
            "MinItems",
            "MaxItems",
            "MinProperties",
            "MaxProperties",
        ),
        "range",
    ),
}
CACHE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class Violation:
    kind: ViolationKind
    path: str
    """Where in the arguments, as `items/0/name`; "" for the arguments object itself."""
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    result: Result
    violations: tuple[Violation, ...] = ()
    message: str = ""
    """One sentence naming the tool and what is wrong; "" when the call is ok."""


OK = Verdict("ok")


class Validators:
    """Compiled validators by schema (canonical JSON bytes as the key), least recently used
    dropped past `size`. A schema jsonschema-rs cannot compile (itself invalid) is cached as
    None: its calls are checked for JSON only, since there is no rule to hold them to."""

    __slots__ = ("_compiled", "_size")

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._compiled: OrderedDict[bytes, jsonschema_rs.Validator | None] = OrderedDict()
        self._size = size

    def classify(self, name: str, arguments: str, tools: Mapping[str, Any]) -> Verdict:
        if name not in tools:
            offered = ", ".join(sorted(tools))
            return Verdict(
                "unknown_name",
                message=f"{name}: no tool of that name was offered (offered: {offered}).",
            )
        try:
            instance = orjson.loads(arguments or "{}")
        except orjson.JSONDecodeError:
            return Verdict("invalid_json", message=f"{name}: the arguments are not valid JSON.")
        schema = tools[name]
        if not isinstance(instance, dict):
            violation = Violation("type", "", "the arguments must be a JSON object")
            return _mismatch(name, (violation,))
        if schema is None:
            return OK  # a tool without `parameters` takes any object
        validator = self.validator(schema)
        if validator is None or validator.is_valid(instance):
            return OK
        return _mismatch(
            name, tuple(_violation(error) for error in validator.iter_errors(instance))
        )

    def validator(self, schema: Any) -> jsonschema_rs.Validator | None:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        compiled = self._compiled
        if key in compiled:
            compiled.move_to_end(key)
            return compiled[key]
        try:
            validator: jsonschema_rs.Validator | None = jsonschema_rs.validator_for(
                schema, offline=True
            )
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError):
            validator = None
        compiled[key] = validator
        if len(compiled) > self._size:
            compiled.popitem(last=False)
        return validator

    def __len__(self) -> int:
        return len(self._compiled)


def _violation(error: jsonschema_rs.ValidationError) -> Violation:
    kind = _KINDS.get(type(error.kind).__name__, "other")
    path = "/".join(str(part) for part in error.instance_path)
    return Violation(kind, path, error.message)


def _mismatch(name: str, violations: tuple[Violation, ...]) -> Verdict:
    described = "; ".join(
        f'"{violation.path}": {violation.message}' if violation.path else violation.message
        for violation in violations
    )
    return Verdict("schema_mismatch", violations, f"{name}: {described}.")
