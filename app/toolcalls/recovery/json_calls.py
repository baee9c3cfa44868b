"""JSON helpers shared by the formats whose calls are JSON objects `{"name", "arguments"}`."""

from __future__ import annotations

import json
from typing import Any

from app.toolcalls.recovery.spec import ParsedCall

_DECODER = json.JSONDecoder()
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})


def load_object(text: str) -> dict[str, Any] | None:
    """The text as exactly one JSON object (surrounding whitespace allowed), else None."""
    values = load_values(text, separators="")
    if values is None or len(values) != 1 or not isinstance(values[0], dict):
        return None
    return values[0]


def load_values(text: str, separators: str = ";") -> list[Any] | None:
    """A run of JSON values separated by whitespace or `separators` (Llama 3 joins several calls
    with `; `); None if anything else is in the text."""
    values: list[Any] = []
    position = 0
    skip = " \t\r\n" + separators
    while True:
        while position < len(text) and text[position] in skip:
            position += 1
        if position == len(text):
            return values
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        values.append(value)


def calls_from_values(values: list[Any] | None) -> list[ParsedCall] | None:
    """Calls from decoded values (a top-level list is a list of calls); None unless every value is
    a call object, so a JSON answer such as `{"answer": 42}` stays text."""
    if not values:
        return None
    flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
    calls = [call_from_object(item) for item in flat]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def call_from_object(candidate: Any) -> ParsedCall | None:
    """`{"name", "arguments"|"parameters", ["type": "function"]}`, or OpenAI's own
    `{"type": "function", "function": {...}}`, as a call; anything else is not one."""
    if not isinstance(candidate, dict):
        return None
    if isinstance(candidate.get("function"), dict) and candidate.get("type") == "function":
        candidate = candidate["function"]
    if set(candidate) - _CALL_KEYS or candidate.get("type", "function") != "function":
        return None
    name = candidate.get("name")
    if not isinstance(name, str) or ("arguments" in candidate) == ("parameters" in candidate):
        return None
    arguments = as_arguments(candidate.get("arguments", candidate.get("parameters")))
    return None if arguments is None else (name, arguments)


def as_arguments(value: Any) -> dict[str, Any] | None:
    """Arguments must be an object; some models send it JSON-encoded as a string, as OpenAI
    does on the wire, so a string holding an object is decoded."""
    if isinstance(value, str):
        return load_object(value)
    return value if isinstance(value, dict) else None
