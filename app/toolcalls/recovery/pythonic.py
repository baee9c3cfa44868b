"""Llama 3.2 / Llama 4 pythonic calls: the whole answer is `[f(a=1, b='x'), g()]`, parsed with
`ast` (never evaluated), keyword arguments with literal values only."""

from __future__ import annotations

import ast
import re
from typing import Any

from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools

_HEAD = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
_UNDECIDED = re.compile(r"\[\s*(?:[A-Za-z_][\w.]*\s*)?")


def parse(body: str, tools: Tools) -> list[ParsedCall] | None:
    """A non-empty list of calls; positional arguments or non-literal values make it text."""
    del tools
    try:
        tree = ast.parse(body.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls = [_call(node) for node in tree.body.elts]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def viable(head: str) -> bool | None:
    """`[` then a name then `(`: decided within a few characters, so a Markdown link or a
    citation `[1]` at the start of an answer flows as text instead of waiting for the end."""
    if _HEAD.match(head):
        return True
    return None if _UNDECIDED.fullmatch(head) else False


def _call(node: ast.expr) -> ParsedCall | None:
    if not isinstance(node, ast.Call) or node.args:
        return None
    name = _dotted_name(node.func)
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None
        try:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return None if name is None else (name, arguments)


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted_name(node.value)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


CALL_LIST = Spec("[", None, parse, anchored=True, keep_start=True, viable=viable)
