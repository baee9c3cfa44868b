"""What the sampler needs from a JSON Schema besides building values: `RootChecker`, the
`jsonschema` check of a candidate against part of the schema, with `$ref`s resolved at its root;
and what a validator has no use for but building a value does: local `$ref`s resolved, two
schemas merged into one (`allOf`, `$ref` siblings, a combinator's branch under its parent), the
schema of one property or array item, and numeric bounds across drafts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing.jsonschema import SchemaRegistry

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_NUMERIC = ("integer", "number")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


@cache
def _no_fetch() -> SchemaRegistry:
    """Without a registry, jsonschema would still fetch an unknown http(s) `$ref` (deprecated);
    this empty one refuses it, leaving the root schema and jsonschema's bundled metaschemas."""
    import referencing  # noqa: PLC0415

    return referencing.Registry()


class RootChecker:
    """`jsonschema` anchored at one root schema: the draft its `$schema` names, else 2020-12;
    `format` not asserted (the sampler makes valid ones itself); only local `$ref`s.
    jsonschema (with its metaschemas, ~3.5 MB) is imported by the first one: only the demo
    model samples, so a proxy without it never loads it."""

    __slots__ = ("_validator",)

    def __init__(self, root: Any) -> None:
        from jsonschema.validators import Draft202012Validator, validator_for  # noqa: PLC0415

        self._validator: Validator | None
        try:
            draft = validator_for(root, default=Draft202012Validator)
            self._validator = draft(root, format_checker=None, registry=_no_fetch())
        except Exception:  # a root jsonschema cannot take (not an object, `$id: 5`...)
            self._validator = None

    def fits(self, value: Any, schema: Any) -> bool:
        """Whether `value` satisfies `schema`, a part of the root (its `$ref`s resolve there).
        jsonschema takes the schema to be well formed; on a malformed one it may raise almost
        anything (an unresolvable `$ref`, an unknown type, `minLength: "3"`, a string where a
        schema belongs, a `pattern` Python cannot compile, a `$ref` cycle recursing for ever),
        and then the candidate does not fit, as under a root it could not take at all."""
        if self._validator is None:
            return False
        try:
            return self._validator.evolve(schema=schema).is_valid(value)
        except Exception:
            return False


def resolve_ref(ref: str, root: Any) -> Any:
    """A local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any JSON pointer) -> its schema.
    Anything unresolvable becomes `{}`: an unknown schema constrains nothing we can see."""
    if not ref.startswith("#"):
        return {}
    node = root
    for raw in ref[1:].split("/")[1:]:
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return {}
    return node


def merge_schemas(first: Any, second: Any) -> Any:
    """Two schemas a value must both satisfy, as one (for `allOf`, `$ref` siblings, and a
    combinator's branch under its parent). Bounds tighten, `required` and `properties` unite;
    for anything else that cannot be combined the first schema wins (best effort)."""
    if first is False or second is False:
        return False
    if not isinstance(second, dict) or not second:
        return first if isinstance(first, dict) else {}
    if not isinstance(first, dict) or not first:
        return second
    merged = dict(first)
    for key, value in second.items():
        merged[key] = _merge_key(key, merged[key], value) if key in merged else value
    return merged


def _merge_key(key: str, mine: Any, theirs: Any) -> Any:
    merger = _MERGERS.get(key)
    return merger(mine, theirs) if merger is not None else mine


def _merge_properties(mine: Any, theirs: Any) -> Any:
    if not (isinstance(mine, dict) and isinstance(theirs, dict)):
        return mine
    names = {**mine, **theirs}
    return {name: merge_schemas(mine.get(name, {}), theirs.get(name, {})) for name in names}


def _merge_lists(mine: Any, theirs: Any) -> Any:
    """`required` (a union) and `allOf` (both apply): each item once, in order."""
    if not (isinstance(mine, list) and isinstance(theirs, list)):
        return mine
    return mine + [item for item in theirs if item not in mine]


def _merge_enums(mine: Any, theirs: Any) -> Any:
    if not (isinstance(mine, list) and isinstance(theirs, list)):
        return mine
    return [value for value in mine if any(same(value, other) for other in theirs)]


def _merge_types(mine: Any, theirs: Any) -> Any:
    """The types both allow; `integer` is the common ground of `integer` and `number`."""
    mine_list = mine if isinstance(mine, list) else [mine]
    theirs_list = theirs if isinstance(theirs, list) else [theirs]
    both: list[Any] = []
    for name in mine_list:
        common = name
        if name in _NUMERIC and any(other in _NUMERIC for other in theirs_list):
            common = "integer" if "integer" in (name, *theirs_list) else "number"
        elif name not in theirs_list:
            continue
        if common not in both:
            both.append(common)
    return both[0] if len(both) == 1 else both or mine


def _tighter(pick: Callable[[float, float], float]) -> Callable[[Any, Any], Any]:
    def merge(mine: Any, theirs: Any) -> Any:
        return pick(mine, theirs) if _numbers(mine, theirs) else mine

    return merge


_MERGERS: dict[str, Callable[[Any, Any], Any]] = {
    "properties": _merge_properties,
    "items": merge_schemas,
    "additionalProperties": merge_schemas,
    "contains": merge_schemas,
    "required": _merge_lists,
    "allOf": _merge_lists,
    "enum": _merge_enums,
    "type": _merge_types,
    **dict.fromkeys(_LOWER_BOUNDS, _tighter(max)),
    **dict.fromkeys(_UPPER_BOUNDS, _tighter(min)),
}


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def same(first: Any, second: Any) -> bool:
    """JSON equality: `true` is not `1` here, unlike in Python."""
    return _canonical(first) == _canonical(second)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def item_schemas(schema: dict[str, Any]) -> tuple[list[Any], Any]:
    """(positional item schemas, schema of the items after them), from 2020-12's
    `prefixItems` + `items` or draft-07's tuple `items` + `additionalItems`."""
    items = schema.get("items", {})
    if isinstance(items, list):
        return items, schema.get("additionalItems", {})
    prefix = schema.get("prefixItems")
    return (prefix if isinstance(prefix, list) else []), items


def property_schema(schema: dict[str, Any], name: str) -> Any:
    """The schema one property's value must meet: its `properties` entry, else the matching
    `patternProperties`, else `additionalProperties` (`False` when the name is not allowed).
    A pattern Python cannot compile (ECMA-only syntax such as `\\p{L}`) counts as matching."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    patterns = schema.get("patternProperties")
    matched = [
        sub for pattern, sub in (patterns or {}).items() if _search(pattern, name) is not False
    ]
    if name in properties:
        result = properties[name]
    elif matched:
        result = matched.pop(0)
    else:
        result = schema.get("additionalProperties", {})
    for extra in matched:
        result = merge_schemas(result, extra)
    return result


def _search(pattern: str, text: str) -> bool | None:
    """`re.search`, as JSON Schema's unanchored `pattern` means; None for a pattern Python
    cannot compile, which we cannot judge."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return None


def number_bounds(schema: dict[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is exclusive, high, high is exclusive), reading both the numeric exclusive
    bounds of draft 6+ and draft-04's boolean flags; the stricter bound wins."""
    low, low_open = _bound(schema, "minimum", "exclusiveMinimum", max)
    high, high_open = _bound(schema, "maximum", "exclusiveMaximum", min)
    return low, low_open, high, high_open


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, stricter: Any) -> Any:
    closed = schema.get(inclusive) if _numbers(schema.get(inclusive)) else None
    flag = schema.get(exclusive)
    if isinstance(flag, bool):
        return closed, flag and closed is not None
    if not _numbers(flag):
        return closed, False
    if closed is None or stricter(flag, closed) == flag:
        return flag, True
    return closed, False
