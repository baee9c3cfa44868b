"""Tool calls a model wrote as text in `content` (no server-side parser), recovered as calls.

Pure: no I/O. `recover()` for whole answers, `TextCallScanner` for streams (both give the
same result), `strip_reasoning()` for `<think>` under every mode, `new_call_id()` for ids.
"""

from app.toolcalls.recovery.events import Call, Event, Reasoning, Recovered, Text
from app.toolcalls.recovery.extraction import recover, strip_reasoning
from app.toolcalls.recovery.ids import new_call_id
from app.toolcalls.recovery.modes import MODES
from app.toolcalls.recovery.scanner import TextCallScanner

__all__ = [
    "MODES",
    "Call",
    "Event",
    "Reasoning",
    "Recovered",
    "Text",
    "TextCallScanner",
    "new_call_id",
    "recover",
    "strip_reasoning",
]
