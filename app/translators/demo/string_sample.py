"""Example strings for a JSON Schema `format` or `pattern`, the part of schema sampling that
needs knowledge of string syntaxes rather than of schemas.

`pattern` support is best effort: candidates are spelled out from Python's own parse of the
regex (`re._parser`: stdlib, but private, so any failure there just yields no candidate) and
the caller keeps one only if `re.fullmatch` accepts it. Lookarounds, backreferences and
ECMA-only syntax (`\\p{L}`) can defeat it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from typing import Any


def _nth(variant: int) -> str:
    return str(variant + 1) if variant else ""


def _day(variant: int) -> str:
    return f"2025-01-{variant % 28 + 1:02d}"


def _url(variant: int) -> str:
    return f"https://example.com/{_nth(variant)}"


def _email(variant: int) -> str:
    return f"user{_nth(variant)}@example.com"


FORMATS: dict[str, Callable[[int], str]] = {
    "date-time": lambda n: f"{_day(n)}T12:00:00Z",
    "date": _day,
    "time": lambda n: f"12:{n % 60:02d}:00Z",
    "duration": lambda n: f"P{n + 1}D",
    "email": _email,
    "idn-email": _email,
    "hostname": lambda n: f"host{_nth(n)}.example.com",
    "uri": _url,
    "url": _url,
    "iri": _url,
    "uri-reference": _url,
    "iri-reference": _url,
    "uuid": lambda n: f"123e4567-e89b-42d3-a456-{n:012d}",
    "ipv4": lambda n: f"192.0.2.{n % 254 + 1}",
    "ipv6": lambda n: f"2001:db8::{n + 1:x}",
}
"""A valid example per `format` name; `variant` n gives the n-th distinct one (uniqueItems)."""


def format_example(form: Any, variant: int) -> str | None:
    """An example of a known `format`, else None."""
    maker = FORMATS.get(form) if isinstance(form, str) else None
    return maker(variant) if maker is not None else None


def full_match(pattern: Any, text: str) -> bool:
    """Whether `text` matches the whole pattern: stricter than JSON Schema's unanchored
    search, so a sample honours what an unanchored pattern was meant to say. A pattern Python
    cannot compile is not ours to judge: True."""
    if not isinstance(pattern, str):
        return True
    try:
        return re.fullmatch(pattern, text) is not None
    except re.error:
        return True


_REGEX_PARSER: Any = importlib.import_module("re._parser")
_PROBE_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ -_.@/:"
_CATEGORY_PATTERNS = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
}


def pattern_candidates(pattern: str, variant: int, min_length: int) -> Iterator[str]:
    """Strings the pattern's parse tree spells out, each repeat stretched further than in the
    last, so that one of them can also reach a `minLength`."""
    try:
        tree = _REGEX_PARSER.parse(pattern)
    except Exception:  # re.error, or whatever a change to the private parser may raise
        return
    for stretch in (0, 1, 3, min_length):
        yield _emit(tree, stretch, variant)


def _emit(tree: Any, stretch: int, variant: int) -> str:
    return "".join(_EMITTERS.get(str(op), _nothing)(arg, stretch, variant) for op, arg in tree)


def _repeat(arg: Any, stretch: int, variant: int) -> str:
    low, high, sub = arg
    return "".join(_emit(sub, stretch, variant + i) for i in range(min(high, low + stretch)))


def _branch(arg: Any, stretch: int, variant: int) -> str:
    alternatives = arg[1]
    return _emit(alternatives[variant % len(alternatives)], stretch, variant)


def _nothing(_arg: Any, _stretch: int, _variant: int) -> str:
    """Anchors, lookarounds, backreferences: nothing to write."""
    return ""


_EMITTERS: dict[str, Callable[[Any, int, int], str]] = {
    "LITERAL": lambda arg, _stretch, _variant: chr(arg),
    "NOT_LITERAL": lambda arg, _stretch, _variant: "b" if arg == ord("a") else "a",
    "ANY": lambda _arg, _stretch, _variant: "a",
    "IN": lambda arg, _stretch, variant: _class_char(arg, variant),
    "MAX_REPEAT": _repeat,
    "MIN_REPEAT": _repeat,
    "POSSESSIVE_REPEAT": _repeat,
    "BRANCH": _branch,
    "SUBPATTERN": lambda arg, stretch, variant: _emit(arg[-1], stretch, variant),
    "ATOMIC_GROUP": _emit,
}


def _class_char(items: list[Any], variant: int) -> str:
    """A character of a `[...]` class: the variant-th member of its first item, or for a
    negated class a probe character outside it."""
    if items and str(items[0][0]) == "NEGATE":
        outside = [c for c in _PROBE_CHARS if not any(_in_item(c, item) for item in items[1:])]
        return outside[variant % len(outside)] if outside else ""
    if not items:
        return ""
    op, arg = str(items[0][0]), items[0][1]
    if op == "LITERAL":
        return chr(arg)
    if op == "RANGE":
        return chr(arg[0] + variant % (arg[1] - arg[0] + 1))
    members = [c for c in _PROBE_CHARS if _in_item(c, items[0])]
    return members[variant % len(members)] if members else ""


def _in_item(char: str, item: tuple[Any, Any]) -> bool:
    op, arg = str(item[0]), item[1]
    if op == "LITERAL":
        return bool(ord(char) == arg)
    if op == "RANGE":
        return bool(arg[0] <= ord(char) <= arg[1])
    if op == "CATEGORY":
        return re.fullmatch(_CATEGORY_PATTERNS.get(str(arg), "$^"), char) is not None
    return False
