"""JSON Schema -> Gemini's `Schema` (a subset of OpenAPI 3.0), as function `parameters` take
it (PROTOCOLS C.3). `response_format` schemas go as `responseJsonSchema` instead, unconverted.

Gemini's Developer API answers 400 for any keyword its Schema message lacks (`Unknown name
"additionalProperties" ... Cannot find field`), for a node without a `type` outside `anyOf`,
for `properties` on a non-object, for a `required` name that is not a property and for an
array without `items`. So each node is rebuilt from the keywords Gemini has, for the node's one
type, rather than by deleting the ones it lacks: a keyword nobody listed cannot slip through.

What Gemini cannot express but a model can still follow (an exclusive bound, `multipleOf`, an
email `format`, a numeric enum or const) becomes a sentence in the node's description; what a
model has no use for (`$schema`, `$id`, `additionalProperties`, `$comment`) is dropped. `$ref`s
are inlined with schema_refs, so a recursive one is refused: it has no finite inlined form.
The caller's schema is never modified.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from app.errors import InvalidRequest
from app.translators.schema_refs import item_schemas, merge_schemas, number_bounds, resolve_ref

Node = dict[str, Any]
"""One Gemini Schema object, as a plain dict."""

GEMINI_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}

# The only `format`s Gemini takes, by type (C.3: "only 'enum' and 'date-time' are supported
# for STRING type"). `enum` is left out: it is only valid with a non-empty `enum` beside it.
FORMATS = {
    "STRING": frozenset({"date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}

# A value the schema leaves open (`{}`, `true`, no type to infer) still needs a type in
# Gemini. A string is a value any such schema accepts, so the model's arguments stay valid.
OPEN_TYPE = "STRING"

# Keywords that say which type a schema without `type` means, checked in this order.
_TYPE_HINTS = (
    ("OBJECT", ("properties", "required", "additionalProperties", "minProperties")),
    ("ARRAY", ("items", "prefixItems", "minItems", "maxItems")),
    ("STRING", ("minLength", "maxLength", "pattern")),
    ("NUMBER", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)
_ANNOTATIONS = ("title", "description", "default", "example", "examples")


def gemini_schema(schema: Any, param: str) -> Node:
    """A JSON Schema as a Gemini Schema; `param` names it in a refusal."""
    return SchemaConverter(schema, param).convert(schema, frozenset())


def function_parameters(schema: Any, param: str) -> Node | None:
    """A tool's `parameters`, or None when it takes none: Gemini rejects an object with no
    properties there ("parameters.properties: should be non-empty for OBJECT type")."""
    if not schema:
        return None
    parameters = gemini_schema(schema, param)
    if parameters.get("type") == "OBJECT" and not parameters.get("properties"):
        return None
    return parameters


class SchemaConverter:
    """Converts the nodes of one root schema, whose `$ref`s resolve against that root."""

    __slots__ = ("_param", "_root")

    def __init__(self, root: Any, param: str) -> None:
        self._root = root
        self._param = param

    def convert(self, schema: Any, refs: frozenset[str]) -> Node:
        """One node. `refs` are the references inlined on the way to it: meeting one again
        means the schema contains itself."""
        flat, refs = self._flatten(schema, refs)
        flat, nullable, refs = self._split_null(flat, refs)
        node = self._typed(flat, refs)
        if nullable:
            node["nullable"] = True
        return node

    # --- references and combinators --------------------------------------------------------

    def _flatten(self, schema: Any, refs: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
        """`$ref`s inlined and `allOf` merged at the top of one node (its children are done
        when they are converted in turn)."""
        flat = schema if isinstance(schema, dict) else {}
        while "$ref" in flat or "allOf" in flat:
            if "$ref" in flat:
                flat, refs = self._inline(flat, refs)
            else:
                flat, refs = self._merge_all_of(flat, refs)
        return flat, refs

    def _inline(
        self, schema: dict[str, Any], refs: frozenset[str]
    ) -> tuple[dict[str, Any], frozenset[str]]:
        ref = schema["$ref"]
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        if not isinstance(ref, str):
            return rest, refs
        if ref in refs:
            raise InvalidRequest(
                f"{self._param} refers to itself through '$ref': {ref}. Gemini's schema has "
                "no references, and a recursive one cannot be written out in full for "
                "gemini upstreams",
                param=self._param,
            )
        target = resolve_ref(ref, self._root)
        # The referring node's own keywords (often a description) win over the target's.
        return merge_schemas(rest, target if isinstance(target, dict) else {}), refs | {ref}

    def _merge_all_of(
        self, schema: dict[str, Any], refs: frozenset[str]
    ) -> tuple[dict[str, Any], frozenset[str]]:
        merged = {key: value for key, value in schema.items() if key != "allOf"}
        branches = schema["allOf"]
        inlined = refs
        for branch in branches if isinstance(branches, list) else ():
            flat, branch_refs = self._flatten(branch, refs)
            merged = merge_schemas(merged, flat)
            inlined |= branch_refs
        return merged, inlined

    def _split_null(
        self, schema: dict[str, Any], refs: frozenset[str]
    ) -> tuple[dict[str, Any], bool, frozenset[str]]:
        """`null` taken out of `type`, `enum`, `const` and `anyOf`/`oneOf` into Gemini's
        `nullable` (OpenAPI 3.0 has no null type); a combinator left with one branch is
        merged into its node."""
        flat, nullable = _without_null(schema)
        for key in ("anyOf", "oneOf"):
            if isinstance(flat.get(key), list):
                flat, branch_null, refs = self._split_branches(flat, key, refs)
                nullable = nullable or branch_null
        return flat, nullable, refs

    def _split_branches(
        self, schema: dict[str, Any], key: str, refs: frozenset[str]
    ) -> tuple[dict[str, Any], bool, frozenset[str]]:
        rest = {name: value for name, value in schema.items() if name != key}
        kept = [branch for branch in schema[key] if not _is_null(self._flatten(branch, refs)[0])]
        nullable = len(kept) < len(schema[key])
        if len(kept) != 1:
            if kept:
                # `oneOf` is sent as `anyOf` (Gemini has no oneOf), unless the node has both:
                # then it stays, and each anyOf branch takes it in (see _any_of).
                rest["oneOf" if key == "oneOf" and "anyOf" in rest else "anyOf"] = kept
            return rest, nullable, refs
        branch, refs = self._flatten(kept[0], refs)
        merged, branch_null, refs = self._split_null(merge_schemas(rest, branch), refs)
        return merged, nullable or branch_null, refs

    # --- one node --------------------------------------------------------------------------

    def _typed(self, schema: dict[str, Any], refs: frozenset[str]) -> Node:
        types = schema.get("type")
        if isinstance(types, list) and len(types) > 1:
            # `type: [A, B]` -> one anyOf branch per type, each keeping the keywords for it.
            variants: list[Any] = [{"type": name} for name in types]
            return self._any_of(schema, "type", variants, refs)
        if isinstance(schema.get("anyOf"), list):
            return self._any_of(schema, "anyOf", schema["anyOf"], refs)
        gemini_type = _gemini_type(schema)
        node: Node = {"type": gemini_type}
        notes: list[str] = []
        _enum_or_const(schema, node, notes)
        _format(schema, node, notes)
        _TYPE_KEYWORDS.get(gemini_type, _no_keywords)(self, schema, node, notes, refs)
        _annotations(schema, node, notes)
        return node

    def _any_of(
        self, schema: dict[str, Any], split: str, variants: list[Any], refs: frozenset[str]
    ) -> Node:
        """An anyOf node: its other keywords apply to every branch, so they are merged into
        each (`split` is the keyword the branches replace); annotations stay on the node."""
        shared = {key: value for key, value in schema.items() if key not in (split, *_ANNOTATIONS)}
        branches = [self.convert(merge_schemas(variant, shared), refs) for variant in variants]
        node: Node = {"anyOf": branches}
        _annotations(schema, node, [])
        return node

    def _object_keywords(
        self, schema: dict[str, Any], node: Node, notes: list[str], refs: frozenset[str]
    ) -> None:
        properties = schema.get("properties")
        if isinstance(properties, dict):
            converted = {
                name: self.convert(sub, refs)
                for name, sub in properties.items()
                if sub is not False  # a property that may not appear: Gemini will not send it
            }
            if converted:
                node["properties"] = converted
        required = schema.get("required")
        if isinstance(required, list) and "properties" in node:
            names = list(dict.fromkeys(name for name in required if name in node["properties"]))
            if names:
                node["required"] = names
        _copy_counts(schema, node, ("minProperties", "maxProperties"))

    def _array_keywords(
        self, schema: dict[str, Any], node: Node, notes: list[str], refs: frozenset[str]
    ) -> None:
        """`items` is required by Gemini; tuple forms (`prefixItems`, draft-07 `items: [...]`)
        become an anyOf of the positions' schemas."""
        prefix, rest = item_schemas(schema)
        variants = list(prefix)
        if rest is not False and (not variants or rest not in ({}, True)):
            variants.append(rest)
        item_schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
        node["items"] = self.convert(item_schema, refs)
        _copy_counts(schema, node, ("minItems", "maxItems"))
        if schema.get("uniqueItems") is True:
            notes.append("Items must be unique.")

    def _string_keywords(
        self, schema: dict[str, Any], node: Node, notes: list[str], refs: frozenset[str]
    ) -> None:
        _copy_counts(schema, node, ("minLength", "maxLength"))
        if isinstance(schema.get("pattern"), str):
            node["pattern"] = schema["pattern"]

    def _number_keywords(
        self, schema: dict[str, Any], node: Node, notes: list[str], refs: frozenset[str]
    ) -> None:
        """Exclusive bounds are exact on integers (`> 0` is `>= 1`); on numbers the bound is
        kept inclusive and the description says it is exclusive."""
        low, low_open, high, high_open = number_bounds(schema)
        integer = node["type"] == "INTEGER"
        if low is not None:
            node["minimum"] = math.floor(low) + 1 if integer and low_open else low
            if low_open and not integer:
                notes.append(f"Must be greater than {_json(low)}.")
        if high is not None:
            node["maximum"] = math.ceil(high) - 1 if integer and high_open else high
            if high_open and not integer:
                notes.append(f"Must be less than {_json(high)}.")
        if _is_number(schema.get("multipleOf")):
            notes.append(f"Must be a multiple of {_json(schema['multipleOf'])}.")


def _no_keywords(
    converter: SchemaConverter,
    schema: dict[str, Any],
    node: Node,
    notes: list[str],
    refs: frozenset[str],
) -> None:
    """BOOLEAN: nothing beyond the type."""


_KeywordBuilder = Callable[[SchemaConverter, dict[str, Any], Node, list[str], frozenset[str]], None]
_TYPE_KEYWORDS: dict[str, _KeywordBuilder] = {
    "OBJECT": SchemaConverter._object_keywords,
    "ARRAY": SchemaConverter._array_keywords,
    "STRING": SchemaConverter._string_keywords,
    "NUMBER": SchemaConverter._number_keywords,
    "INTEGER": SchemaConverter._number_keywords,
}


def _without_null(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    flat = dict(schema)
    nullable = flat.pop("nullable", False) is True  # OpenAPI-style input
    types = flat.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        others = [] if types == "null" else [name for name in types if name != "null"]
        if others:
            flat["type"] = others[0] if len(others) == 1 else others
        else:
            del flat["type"]
        nullable = True
    if isinstance(flat.get("enum"), list) and None in flat["enum"]:
        flat["enum"] = [value for value in flat["enum"] if value is not None]
        nullable = True
    if "const" in flat and flat["const"] is None:
        del flat["const"]
        nullable = True
    return flat, nullable


def _is_null(schema: dict[str, Any]) -> bool:
    """A branch that only allows null (`{"type": "null"}` and its spellings)."""
    return (
        schema.get("type") in ("null", ["null"])
        or ("const" in schema and schema["const"] is None)
        or schema.get("enum") == [None]
    )


def _gemini_type(schema: dict[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, list) and len(declared) == 1:
        declared = declared[0]
    if isinstance(declared, str) and declared.lower() in GEMINI_TYPES:
        return GEMINI_TYPES[declared.lower()]
    if "const" in schema:
        return _value_type(schema["const"])
    values = schema.get("enum")
    if isinstance(values, list) and values:
        return _value_type(values[0])
    for gemini_type, keywords in _TYPE_HINTS:
        if any(keyword in schema for keyword in keywords):
            return gemini_type
    return OPEN_TYPE


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "NUMBER"
    if isinstance(value, dict):
        return "OBJECT"
    return "ARRAY" if isinstance(value, list) else "STRING"


def _enum_or_const(schema: dict[str, Any], node: Node, notes: list[str]) -> None:
    """Gemini's `enum` holds strings on a STRING node only; a string `const` is a one-value
    enum. Other values the model is told about instead of being silently freed."""
    if "const" in schema:
        values = [schema["const"]]
    elif isinstance(schema.get("enum"), list) and schema["enum"]:
        values = schema["enum"]
    else:
        return
    if node["type"] == "STRING" and all(isinstance(value, str) for value in values):
        node["enum"] = list(values)
    elif len(values) == 1:
        notes.append(f"Must be {_json(values[0])}.")
    else:
        notes.append(f"One of: {', '.join(_json(value) for value in values)}.")


def _format(schema: dict[str, Any], node: Node, notes: list[str]) -> None:
    value = schema.get("format")
    if not isinstance(value, str):
        return
    if value in FORMATS.get(node["type"], ()):
        node["format"] = value
    else:
        notes.append(f"Format: {value}.")


def _annotations(schema: dict[str, Any], node: Node, notes: list[str]) -> None:
    """title, description (with the notes), default and example, which Gemini's Schema has;
    the first of JSON Schema's `examples` becomes the `example`."""
    if isinstance(schema.get("title"), str):
        node["title"] = schema["title"]
    description = schema.get("description")
    text = " ".join([description, *notes] if isinstance(description, str) else notes)
    if text:
        node["description"] = text
    if "default" in schema:
        node["default"] = schema["default"]
    examples = schema.get("examples")
    if "example" in schema:
        node["example"] = schema["example"]
    elif isinstance(examples, list) and examples:
        node["example"] = examples[0]


def _copy_counts(schema: dict[str, Any], node: Node, keywords: tuple[str, ...]) -> None:
    for keyword in keywords:
        value = schema.get(keyword)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            node[keyword] = value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
