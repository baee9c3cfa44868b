"""The `tool_calls.recover` modes and which text formats each one looks for."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from app.toolcalls.recovery import deepseek, kimi
from app.toolcalls.recovery.hermes import TOOL_CALL
from app.toolcalls.recovery.json_text import BARE_JSON, FENCE
from app.toolcalls.recovery.llama import PYTHON_TAG
from app.toolcalls.recovery.mistral import TOOL_CALLS
from app.toolcalls.recovery.pythonic import CALL_LIST
from app.toolcalls.recovery.qwen_xml import FUNCTION_TAG
from app.toolcalls.recovery.spec import Spec

_BY_FORMAT: Mapping[str, tuple[Spec, ...]] = MappingProxyType(
    {
        "off": (),
        "hermes": (TOOL_CALL,),
        "qwen_xml": (TOOL_CALL, FUNCTION_TAG),
        "mistral": (TOOL_CALLS,),
        "llama": (PYTHON_TAG, FUNCTION_TAG, BARE_JSON),
        "pythonic": (CALL_LIST,),
        "deepseek": deepseek.SPECS,
        "kimi": kimi.SPECS,
        "json": (BARE_JSON, FENCE),
    }
)
MODES: tuple[str, ...] = ("off", "auto", *(mode for mode in _BY_FORMAT if mode != "off"))


def specs_for(mode: str) -> tuple[Spec, ...]:
    """The specs a mode scans for; `auto` is all of them (the scanner indexes them by first
    character, so more formats do not make the per-delta check slower)."""
    if mode == "auto":
        every = (spec for specs in _BY_FORMAT.values() for spec in specs)
        return tuple(dict.fromkeys(every))
    if mode not in _BY_FORMAT:
        raise ValueError(f"unknown tool_calls.recover mode {mode!r}; expected one of {MODES}")
    return _BY_FORMAT[mode]
