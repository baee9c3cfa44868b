"""Calls written as plain JSON: the whole answer is `{"name", "arguments"|"parameters"}` objects
(optionally `"type": "function"`, several joined by `;`), or one ```json fence holding them."""

from __future__ import annotations

from app.toolcalls.recovery.json_calls import calls_from_values, load_values
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools


def parse_json_calls(body: str, tools: Tools) -> list[ParsedCall] | None:
    """Objects separated by `;` or whitespace (Llama 3's `{...}; {...}`)."""
    del tools
    return calls_from_values(load_values(body))


def object_viable(head: str) -> bool | None:
    """An object that is a call opens with a key: `{` then a quote. Anything else (a template
    `{name}`, a set) is text, decided here instead of at the end of the stream."""
    rest = head[1:].lstrip()
    if not rest:
        return None
    return rest.startswith('"')


BARE_JSON = Spec("{", None, parse_json_calls, anchored=True, keep_start=True, viable=object_viable)
FENCE = Spec("```json", "```", parse_json_calls, anchored=True)
