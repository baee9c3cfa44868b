"""What one text format declares: its start and end markers and how to parse what lies between."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ParsedCall = tuple[str, dict[str, Any]]
"""A tool name and its arguments as an object, before the name is checked against the offer."""

Tools = Mapping[str, Any]
"""Offered tool name -> its JSON Schema `parameters` (qwen_xml converts values by it)."""

Parser = Callable[[str, Tools], list[ParsedCall] | None]
"""Parses the text between a start and an end marker; None when it is not a valid call."""


@dataclass(frozen=True, slots=True)
class Spec:
    """One marker-delimited call region.

    `end` None means the call runs to the end of the text (Mistral, Llama's python tag, bare
    JSON, pythonic): the scanner can only decide at `finish()`. `anchored` specs apply only at
    the first non-whitespace character of the answer, as vLLM's llama and pythonic parsers do,
    because `{` and `[` are too common in prose to be markers anywhere. `keep_start` hands the
    start marker to the parser as part of the body (a bare `{` is part of the JSON).
    `viable` rejects a region early from its first characters (None: not yet decided), so
    plain text that starts with `[`, or prose that names a tag, is not held to the end.
    `closer` marks a token that ends a section of calls: dropped after a call, plain text
    anywhere else (nothing of the model's answer is lost to a stray token).
    """

    start: str
    end: str | None
    parse: Parser
    anchored: bool = False
    keep_start: bool = False
    viable: Callable[[str], bool | None] | None = None
    closer: bool = False


def consume_only(body: str, tools: Tools) -> list[ParsedCall] | None:
    """Parser for tokens that close a section of calls (DeepSeek's, Kimi's): they carry no
    call and are dropped, as the upstream's own parser drops the special token."""
    del body, tools
    return []
