"""DeepSeek V3 / R1-0528 (`function` SEP `NAME` + a ```json fence) and V3.1 (`NAME` SEP `{json}`)
calls, between DeepSeek's special tokens."""

from __future__ import annotations

import re

from app.toolcalls.recovery.json_calls import load_object
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools, consume_only

# The tokens' bars are U+FF5C (fullwidth) and their word separators U+2581: ASCII look-alikes
# never match, which is why they are spelled out by code point.
_BAR = "\uff5c"
_WORD = "\u2581"


def _token(*words: str) -> str:
    return f"<{_BAR}{_WORD.join(words)}{_BAR}>"


CALLS_BEGIN = _token("tool", "calls", "begin")
CALL_BEGIN = _token("tool", "call", "begin")
SEPARATOR = _token("tool", "sep")
CALL_END = _token("tool", "call", "end")
CALLS_END = _token("tool", "calls", "end")
_V3_FENCE = re.compile(r"\s*([^\n`]+?)\s*\n\s*```(?:json)?\s*\n(.*?)\s*```\s*", re.DOTALL)


def parse(body: str, tools: Tools) -> list[ParsedCall] | None:
    """One call; the section's opening token may precede it (the first call's region)."""
    del tools
    stripped = body.strip().removeprefix(CALL_BEGIN)
    head, separated, tail = stripped.partition(SEPARATOR)
    name = head.strip()
    fenced = _V3_FENCE.fullmatch(tail) if name == "function" else None
    if fenced is not None:
        name, tail = fenced.group(1), fenced.group(2)
    arguments = load_object(tail)
    if not separated or not name or arguments is None:
        return None
    return [(name, arguments)]


SPECS = (
    Spec(CALLS_BEGIN, CALL_END, parse),
    Spec(CALL_BEGIN, CALL_END, parse),
    Spec(CALLS_END, "", consume_only, closer=True),
)
