"""How the demo's upstream model ids differ when they call a tool, so `eval` has something to
compare offline (CONTRACT.md, the `demo` kind):

- `demo` calls with structured, schema-valid calls;
- `demo-text` writes its call as text in `content`, Hermes-style, as a model behind a server
  without a tool parser does (recovered by `tool_calls.recover`);
- `demo-sloppy` breaks the schema on one request in three and writes a bare JSON call as
  text on another, chosen from the request's hash so a run is repeatable.
"""

from __future__ import annotations

import json
from typing import Any

from app.openai_types import ToolCallOut

TEXT_MODEL = "demo-text"
SLOPPY_MODEL = "demo-sloppy"


def as_text(call: ToolCallOut, style: str) -> str:
    """The call as a model writes it without a tool parser: Hermes tags, or bare JSON."""
    function = call["function"]
    written = json.dumps(
        {"name": function["name"], "arguments": json.loads(function["arguments"])},
        ensure_ascii=False,
    )
    if style == "hermes":
        return f"<tool_call>\n{written}\n</tool_call>"
    return written


def sloppy_turn(key: str) -> str:
    """What demo-sloppy does with this request: `valid`, `broken` or `text`."""
    return ("valid", "broken", "text")[int(key[:8], 16) % 3]


def broken_arguments(arguments: dict[str, Any], parameters: Any) -> dict[str, Any]:
    """The arguments with one mistake real models make: a required field left out, else a
    value outside its enum, else a field of the wrong type."""
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    required = parameters.get("required") if isinstance(parameters, dict) else None
    broken = dict(arguments)
    for name in required if isinstance(required, list) else ():
        if name in broken:
            del broken[name]
            return broken
    for name, schema in properties.items():
        if isinstance(schema, dict) and "enum" in schema:
            broken[name] = "not-one-of-the-options"
            return broken
    for name, schema in properties.items():
        wrong: Any = ["a list"] if (schema or {}).get("type") != "array" else "a string"
        broken[name] = wrong
        return broken
    broken["unexpected"] = True
    return broken
