"""Qwen3-Coder / Qwen3 XML calls: `<function=NAME><parameter=K>V</parameter></function>`, with
values converted by the offered tool's declared types (vLLM's `qwen3_coder` parser)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from app.toolcalls.recovery.json_calls import load_object
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools

_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)</function>", re.DOTALL)
# A missing </parameter> is tolerated, as vLLM does: the next parameter or the end closes it.
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_MISSING = object()
_FITS: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def parse_function_blocks(text: str, tools: Tools) -> list[ParsedCall] | None:
    """The body of a `<tool_call>`: one or more `<function=...>` blocks and nothing else."""
    calls: list[ParsedCall] = []
    position = 0
    for match in _FUNCTION.finditer(text):
        call = _parse_function(match.group(1).strip(), match.group(2), tools)
        if call is None or text[position : match.start()].strip():
            return None
        calls.append(call)
        position = match.end()
    return calls if calls and not text[position:].strip() else None


def parse_function_tag(body: str, tools: Tools) -> list[ParsedCall] | None:
    """A bare `<function=NAME>...</function>` (the body starts after `<function=`): either
    Llama's custom-function style with a JSON object, or Qwen3's XML parameters without the
    `<tool_call>` wrapper."""
    name, closed, inner = body.partition(">")
    if not closed or "\n" in name:
        return None
    if inner.strip().startswith("{"):
        arguments = load_object(inner)
        return None if arguments is None else [(name.strip(), arguments)]
    call = _parse_function(name.strip(), inner, tools)
    return None if call is None else [call]


def _parse_function(name: str, inner: str, tools: Tools) -> ParsedCall | None:
    properties = _properties(tools.get(name))
    arguments: dict[str, Any] = {}
    position = 0
    for match in _PARAMETER.finditer(inner):
        if inner[position : match.start()].strip():
            return None
        key = match.group(1).strip()
        arguments[key] = convert(_trim_newlines(match.group(2)), _declared_type(properties, key))
        position = match.end()
    return (name, arguments) if name and not inner[position:].strip() else None


def convert(raw: str, declared: str | None) -> Any:
    """A raw parameter value as the schema's type. Undeclared parameters and strings stay
    strings (vLLM's rule); a value that does not fit its type stays the raw string, so the
    validator reports it instead of the proxy inventing a value."""
    if declared is None or declared == "string":
        return raw
    text = raw.strip()
    if text.lower() in {"null", "none"}:
        return None
    fits = _FITS.get(declared)
    if fits is None:
        return raw
    value = _literal(text)
    if isinstance(value, bool) and declared != "boolean":
        return raw
    return value if isinstance(value, fits) else raw


def _literal(text: str) -> Any:
    """JSON first; Python literals (`True`, single quotes) second, as vLLM does."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _trim_newlines(value: str) -> str:
    """The template puts the value on its own line; one newline each side is layout."""
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _properties(schema: Any) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, dict) else {}


def _declared_type(properties: dict[str, Any], key: str) -> str | None:
    prop = properties.get(key)
    declared = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(declared, list):
        declared = next((kind for kind in declared if kind != "null"), None)
    return declared if isinstance(declared, str) else None


def tag_viable(head: str) -> bool | None:
    """`<function=NAME>`: a name on one line, closed by `>`, decides it."""
    name, closed, _ = head.removeprefix("<function=").partition(">")
    if "\n" in name or " " in name.strip():
        return False
    return True if closed and name.strip() else (None if not closed else False)


FUNCTION_TAG = Spec("<function=", "</function>", parse_function_tag, viable=tag_viable)
"""Shared with the llama format, whose custom-function style uses the same tag."""
