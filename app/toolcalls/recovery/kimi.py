"""Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
<|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>`."""

from __future__ import annotations

import re

from app.toolcalls.recovery.json_calls import load_object
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools, consume_only

CALL_BEGIN = "<|tool_call_begin|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
# Kimi's tokenizer has both spellings of the section tokens (vLLM's kimi_k2 parser accepts both).
SECTION_BEGINS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
SECTION_ENDS = ("<|tool_calls_section_end|>", "<|tool_call_section_end|>")
_CALL_ID = re.compile(r"(?:functions\.)?([\w.\-]+?)(?::\d+)?")


def parse(body: str, tools: Tools) -> list[ParsedCall] | None:
    """One call; its `functions.NAME:IDX` id is dropped (the proxy makes its own ids)."""
    del tools
    stripped = body.strip().removeprefix(CALL_BEGIN)
    head, separated, tail = stripped.partition(ARGUMENT_BEGIN)
    call_id = _CALL_ID.fullmatch(head.strip())
    arguments = load_object(tail)
    if not separated or call_id is None or arguments is None:
        return None
    return [(call_id.group(1), arguments)]


SPECS = (
    *(Spec(marker, CALL_END, parse) for marker in SECTION_BEGINS),
    Spec(CALL_BEGIN, CALL_END, parse),
    *(Spec(marker, "", consume_only, closer=True) for marker in SECTION_ENDS),
)
