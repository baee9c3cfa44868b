"""Mistral: `[TOOL_CALLS] [{"name", "arguments"}, ...]` (pre-v11 tokenizers) and
`[TOOL_CALLS]name{json}` once per call (v11+), optionally with `[CALL_ID]id` / `[ARGS]`."""

from __future__ import annotations

import re

from app.toolcalls.recovery.json_calls import calls_from_values, load_object, load_values
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools

MARKER = "[TOOL_CALLS]"
_NAMED = re.compile(
    r"([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\]\s*[A-Za-z0-9]+\s*)?(?:\[ARGS\])?\s*(\{.*)", re.DOTALL
)


def parse(body: str, tools: Tools) -> list[ParsedCall] | None:
    """Everything after the first marker; later markers start further calls. There is no end
    marker, so the region runs to the end of the answer."""
    del tools
    calls: list[ParsedCall] = []
    for segment in body.split(MARKER):
        parsed = _parse_segment(segment.strip())
        if parsed is None:
            return None
        calls.extend(parsed)
    return calls or None


def _parse_segment(segment: str) -> list[ParsedCall] | None:
    if segment.startswith(("[", "{")):
        return calls_from_values(load_values(segment, separators=""))
    named = _NAMED.fullmatch(segment)
    if named is None:
        return None
    arguments = load_object(named.group(2))
    return None if arguments is None else [(named.group(1), arguments)]


TOOL_CALLS = Spec(MARKER, None, parse)
