"""Llama 3.x JSON calls: `<|python_tag|>{"name", "parameters"}; {...}` or the same JSON as the
whole answer, and the custom-function style `<function=NAME>{json}</function>`."""

from __future__ import annotations

from app.toolcalls.recovery.json_text import parse_json_calls
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools

_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")


def parse_python_tag(body: str, tools: Tools) -> list[ParsedCall] | None:
    """JSON calls after the tag, which ends the answer (kept end-of-message tokens dropped).
    Built-in tool calls such as `brave_search.call(...)` are not JSON and stay text."""
    stripped = body.strip()
    for token in _END_TOKENS:
        stripped = stripped.removesuffix(token)
    return parse_json_calls(stripped, tools)


PYTHON_TAG = Spec("<|python_tag|>", None, parse_python_tag)
