"""Hermes 2 Pro / Qwen2.5 / Qwen3: `<tool_call>{"name", "arguments"}</tool_call>` per call."""

from __future__ import annotations

from app.toolcalls.recovery.json_calls import calls_from_values, load_values
from app.toolcalls.recovery.qwen_xml import parse_function_blocks
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools


def parse_tool_call(body: str, tools: Tools) -> list[ParsedCall] | None:
    """A `<tool_call>` body: Hermes JSON, or Qwen3's XML functions (same wrapper tag, so both
    `hermes` and `qwen_xml` modes read either)."""
    stripped = body.strip()
    if stripped.startswith("<function="):
        return parse_function_blocks(stripped, tools)
    return calls_from_values(load_values(stripped, separators=""))


def body_viable(head: str) -> bool | None:
    """A call body opens with `{` or `<function=`; prose that merely names the tag ("wrap it
    in <tool_call> tags") flows on as text instead of being held to the end of the stream."""
    rest = head.removeprefix("<tool_call>").lstrip()
    if not rest:
        return None
    if rest.startswith(("{", "<function=")):
        return True
    return None if "<function=".startswith(rest) else False


TOOL_CALL = Spec("<tool_call>", "</tool_call>", parse_tool_call, viable=body_viable)
