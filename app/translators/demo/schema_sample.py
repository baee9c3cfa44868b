"""Produces a value that satisfies a JSON Schema (the subset tool definitions use), so the demo
model can call any offered tool with arguments a strict client would accept.

Pure and deterministic. Covers `type` (and type lists), `enum`, `const`, `default`, objects
(every property, required or not; `additionalProperties`, `patternProperties`, min/max
properties), arrays (`items`, `prefixItems` and draft-07 tuples, min/max, `uniqueItems`,
`contains`), strings (length, common `format`s, `pattern`), numbers (bounds, exclusive bounds,
`multipleOf`), `anyOf`/`oneOf`/`allOf` and local `$ref` with a recursion guard. Wherever a
choice is made, the candidate is checked with `jsonschema` (the draft `$schema` names, else
2020-12; `format` not asserted; only local `$ref`s, never a fetch), and one it cannot judge on a
malformed schema is taken as not fitting.

`pattern` support is best effort (see string_sample): when no candidate built from the regex
passes `re.fullmatch`, a plain string is returned. Not built for (though candidates are checked
against them): `if`/`then`/`else`, `not`, `dependent*`, `unevaluated*`, `propertyNames`; remote
`$ref`s are neither. Unsatisfiable schemas give a best-effort value (null where nothing can be
built).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from app.translators.demo.number_sample import multiples_near, number_candidates
from app.translators.demo.string_sample import format_example, full_match, pattern_candidates
from app.translators.schema_refs import (
    RootChecker,
    item_schemas,
    merge_schemas,
    property_schema,
    resolve_ref,
    same,
)

MAX_DEPTH = 24
"""Nesting beyond this gives up (returns null): only a schema that requires infinite values,
such as a required self-reference, gets here."""
UNIQUE_TRIES = 8
PLAIN_TEXT = "example"

_OBJECT_KEYS = frozenset(
    {"properties", "required", "additionalProperties", "patternProperties", "minProperties"}
)
_ARRAY_KEYS = frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"})
_NUMBER_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})

_PLACE_WORDS = frozenset(
    {"city", "location", "place", "country", "region", "address", "destination", "town"}
)
_FREE_TEXT_WORDS = frozenset(
    {"query", "q", "text", "search", "prompt", "question", "message", "input", "content"}
    | {"keyword", "keywords", "topic", "term", "terms", "subject"}
)
_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de"
_CAPITALISED_RUN = re.compile(rf"[{_UPPER}][\w'\u2019-]*(?:[ \t]+[{_UPPER}][\w'\u2019-]*)*")


def sample(schema: Any, *, hint: str | None = None) -> Any:
    """A value valid against `schema`.

    `hint` is free text from the user: it becomes the value of a string property whose name
    asks for free text (query, text, prompt...) or, reduced to its last capitalised words, a
    place (city, location...), when it meets that property's constraints. A missing, empty or
    `true` schema gives `{}`, since tool parameters are always an object.
    """
    if schema is None or schema is True or schema == {}:
        return {}
    return _Sampler(schema, hint).value(schema, _At())


@dataclass(frozen=True, slots=True)
class _At:
    """Where the sampler is and what it wants there: `name` of the property (steers the hint),
    `variant` (the n-th distinct value, for uniqueItems), `minimal` (inside a recursive `$ref`:
    only what is required, so recursion ends), the `$ref`s being expanded, the depth, and
    `fractions` (numbers that are not whole, where a whole one matched two `oneOf` branches)."""

    name: str | None = None
    variant: int = 0
    minimal: bool = False
    refs: tuple[str, ...] = ()
    depth: int = 0
    fractions: bool = False

    def child(self, name: str | None, variant: int | None = None) -> _At:
        variant = self.variant if variant is None else variant
        return replace(self, name=name, variant=variant, depth=self.depth + 1)

    def deeper(self) -> _At:
        return replace(self, depth=self.depth + 1)


class _Sampler:
    __slots__ = ("checker", "hint", "root")

    def __init__(self, root: Any, hint: str | None) -> None:
        self.root = root
        self.hint = hint
        self.checker = RootChecker(root)

    def fits(self, value: Any, schema: Any) -> bool:
        return self.checker.fits(value, schema)

    def value(self, schema: Any, at: _At) -> Any:
        """A value for `schema`: references and `allOf` are expanded first; then a fixed
        choice (`const`, `enum`, a valid `default`) wins over a generated value."""
        if schema is False or at.depth > MAX_DEPTH:
            return None
        if not isinstance(schema, dict) or not schema:
            return self._string({}, at)
        if "$ref" in schema or "allOf" in schema:
            return self.value(*self._expand(schema, at))
        if "const" in schema or "enum" in schema or self._default_fits(schema, at):
            return self._choice(schema, at)
        if "anyOf" in schema or "oneOf" in schema:
            return self._branches(schema, at)
        return self._typed(schema, at)

    def _expand(self, schema: dict[str, Any], at: _At) -> tuple[Any, _At]:
        """`$ref` siblings are merged in (2020-12 applies them; draft-07 ignores them, and a
        value meeting both is valid under either). A `$ref` met again inside its own
        expansion switches to minimal mode, so a recursive schema yields a finite value."""
        if "$ref" not in schema:
            return self._flatten_all_of(schema), at.deeper()
        ref = str(schema["$ref"])
        siblings = {key: sub for key, sub in schema.items() if key != "$ref"}
        target = merge_schemas(resolve_ref(ref, self.root), siblings)
        minimal = at.minimal or ref in at.refs
        return target, replace(at, refs=(*at.refs, ref), minimal=minimal, depth=at.depth + 1)

    def _flatten_all_of(self, schema: dict[str, Any]) -> Any:
        merged: Any = {key: sub for key, sub in schema.items() if key != "allOf"}
        for part in schema["allOf"] if isinstance(schema["allOf"], list) else ():
            resolved = part
            if isinstance(part, dict) and "$ref" in part:
                siblings = {key: sub for key, sub in part.items() if key != "$ref"}
                resolved = merge_schemas(resolve_ref(str(part["$ref"]), self.root), siblings)
            merged = merge_schemas(merged, resolved)
        return merged

    def _default_fits(self, schema: dict[str, Any], at: _At) -> bool:
        """A valid `default` is what the tool's author expects; not for the n-th distinct
        value of a uniqueItems array, where it would repeat."""
        return "default" in schema and at.variant == 0 and self.fits(schema["default"], schema)

    def _choice(self, schema: dict[str, Any], at: _At) -> Any:
        """`const`, else a valid `default`, else an `enum` member meeting the rest of the schema."""
        if "const" in schema:
            return schema["const"]
        if self._default_fits(schema, at):
            return schema["default"]
        options = schema["enum"] if isinstance(schema["enum"], list) else []
        options = [option for option in options if self.fits(option, schema)] or options
        return options[at.variant % len(options)] if options else None

    def _branches(self, schema: dict[str, Any], at: _At) -> Any:
        """The first branch whose value satisfies the whole schema, so for `oneOf` a value that
        also matches a later branch is passed over when possible. Non-null branches come
        first, for a realistic example, except inside a recursive `$ref`: there null ends the
        recursion (`boss: Optional[Person]`, required as strict schemas make every field)."""
        key = "anyOf" if "anyOf" in schema else "oneOf"
        branches = schema[key] if isinstance(schema[key], list) else []
        base = {name: sub for name, sub in schema.items() if name != key}
        candidates: list[Any] = []
        for branch in sorted(branches, key=lambda b: _is_null_schema(b) != at.minimal):
            candidate = self.value(merge_schemas(base, branch), at.deeper())
            if self.fits(candidate, schema):
                return candidate
            candidates.append(candidate)
        if not at.fractions and any(type(value) is int for value in candidates):
            return self._branches(schema, replace(at, fractions=True))  # matched twice, maybe
        return candidates[0] if candidates else self._typed(base, at)

    def _typed(self, schema: dict[str, Any], at: _At) -> Any:
        builders: dict[str, Callable[[dict[str, Any], _At], Any]] = {
            "object": self._object,
            "array": self._array,
            "integer": self._number,
            "number": self._number,
            "boolean": _boolean,
            "null": _null,
            "string": self._string,
        }
        return builders.get(_pick_type(schema), builders["string"])(schema, at)

    def _object(self, schema: dict[str, Any], at: _At) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required = (
            [name for name in required if isinstance(name, str)]
            if isinstance(required, list)
            else []
        )
        wanted = [name for name in properties if not at.minimal or name in required]
        wanted += [name for name in required if name not in properties]
        limit = schema.get("maxProperties")
        room = limit - len(required) if isinstance(limit, int) else len(wanted)
        result: dict[str, Any] = {}
        for name in wanted:
            optional = name not in required
            sub = property_schema(schema, name)
            if sub is False or (optional and room <= 0):
                continue
            room -= optional
            result[name] = self.value(sub, at.child(name))
        self._add_extra_properties(schema, result, at)
        return result

    def _add_extra_properties(
        self, schema: dict[str, Any], result: dict[str, Any], at: _At
    ) -> None:
        """Made-up properties for a `minProperties` the declared ones cannot reach."""
        need = schema.get("minProperties")
        if not isinstance(need, int):
            return
        for index in range(1, need + 1):
            name = f"extra_{index}"
            sub = property_schema(schema, name)
            if len(result) >= need:
                return
            if name not in result and sub is not False:
                result[name] = self.value(sub, at.child(name))

    def _array(self, schema: dict[str, Any], at: _At) -> list[Any]:
        prefix, rest = item_schemas(schema)
        count = _item_count(schema, len(prefix), closed=rest is False, minimal=at.minimal)
        unique = schema.get("uniqueItems") is True
        items: list[Any] = []
        for index in range(count):
            item_schema = prefix[index] if index < len(prefix) else rest
            where = at.child(None, at.variant + index)
            items.append(self._item(item_schema, items, where, unique=unique))
        return self._with_contains(schema, items, at)

    def _item(self, schema: Any, earlier: list[Any], at: _At, *, unique: bool) -> Any:
        candidate = self.value(schema, at)
        for bump in range(1, UNIQUE_TRIES):
            if not unique or not any(same(candidate, item) for item in earlier):
                break
            candidate = self.value(schema, replace(at, variant=at.variant + bump))
        return candidate

    def _with_contains(self, schema: dict[str, Any], items: list[Any], at: _At) -> list[Any]:
        contains = schema.get("contains")
        if contains is None or any(self.fits(item, contains) for item in items):
            return items
        needed = self.value(contains, at.child(None))
        limit = schema.get("maxItems")
        if items and isinstance(limit, int) and len(items) >= limit:
            return [needed, *items[1:]]
        return [*items, needed]

    def _string(self, schema: dict[str, Any], at: _At) -> str:
        pattern = schema.get("pattern")
        for candidate in self._string_candidates(schema, at):
            if self.fits(candidate, schema) and full_match(pattern, candidate):
                return candidate
        return _fit_length(_plain(at.variant), schema)

    def _string_candidates(self, schema: dict[str, Any], at: _At) -> Iterator[str]:
        form = schema.get("format")
        hinted = _hinted(at.name, self.hint) if at.variant == 0 and form is None else None
        high = schema.get("maxLength")
        if hinted:
            yield hinted[:high] if isinstance(high, int) else hinted
        example = format_example(form, at.variant)
        if example is not None:
            yield example
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            low = schema.get("minLength")
            yield from pattern_candidates(pattern, at.variant, low if isinstance(low, int) else 0)
        yield _fit_length(_plain(at.variant), schema)

    def _number(self, schema: dict[str, Any], at: _At) -> int | float:
        """Whole numbers first, for `number` too (agents such as Codex read a `number` into an
        integer), unless the schema asks for a fraction (a `multipleOf` below 1, bounds that
        hold no whole number, or a `oneOf` a whole number would match twice: at.fractions)."""
        step = schema.get("multipleOf")
        integer = _pick_type(schema) == "integer"
        fine = (isinstance(step, int | float) and 0 < step < 1) or at.fractions
        kinds = [True] if integer else [False] if fine else [True, False]
        candidates: list[int | float] = []
        for whole in kinds:
            candidates = number_candidates(schema, at.variant, integer=whole)
            for candidate in candidates:
                for number in multiples_near(candidate, step, integer=whole):
                    if self.fits(number, schema):
                        return number
        return candidates[0]


def _pick_type(schema: dict[str, Any]) -> str:
    """The declared type (the first non-null one of a list), else the one its keywords imply."""
    declared = schema.get("type")
    if isinstance(declared, list):
        names = [name for name in declared if isinstance(name, str)]
        non_null = [name for name in names if name != "null"]
        declared = non_null[0] if non_null else (names[0] if names else None)
    if isinstance(declared, str):
        return declared
    keys = schema.keys()
    if keys & _OBJECT_KEYS:
        return "object"
    if keys & _ARRAY_KEYS:
        return "array"
    return "number" if keys & _NUMBER_KEYS or "multipleOf" in keys else "string"


def _boolean(_schema: dict[str, Any], at: _At) -> bool:
    return at.variant % 2 == 0


def _null(_schema: dict[str, Any], _at: _At) -> None:
    return None


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _item_count(schema: dict[str, Any], prefix: int, *, closed: bool, minimal: bool) -> int:
    """One item (or every positional one) for a realistic example; only `minItems` when
    minimal; never more than `maxItems`, nor past the prefix when further items are banned."""
    low = schema.get("minItems")
    low = low if isinstance(low, int) else 0
    want = max(low, 0 if minimal else max(prefix, 1))
    if closed:
        want = min(want, prefix)
    high = schema.get("maxItems")
    if isinstance(high, int):
        want = min(want, high)
    return max(want, 0)


def _hinted(name: str | None, hint: str | None) -> str | None:
    """The user's text for a property that asks for free text, or its place name for one that
    asks for a place; None for any other property."""
    if not name or not hint:
        return None
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()))
    if words & _PLACE_WORDS:
        return _place(hint)
    return hint if words & _FREE_TEXT_WORDS else None


def _place(text: str) -> str:
    """The last run of capitalised words not opening the text ("weather in New York?" ->
    "New York"), else the whole text."""
    runs = [
        run.group()
        for run in _CAPITALISED_RUN.finditer(text)
        if run.start() > 0 and len(run.group()) > 1
    ]
    return runs[-1] if runs else text


def _plain(variant: int) -> str:
    return f"{PLAIN_TEXT}-{variant + 1}" if variant else PLAIN_TEXT


def _fit_length(text: str, schema: dict[str, Any]) -> str:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(high, int):
        text = text[: max(high, 0)]
    if isinstance(low, int) and len(text) < low:
        text += "x" * (low - len(text))
    return text
