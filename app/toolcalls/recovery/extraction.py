"""Non-stream recovery: a whole answer in, content, reasoning and calls out."""

from __future__ import annotations

from app.toolcalls.recovery.events import Recovered, Text, fold
from app.toolcalls.recovery.scanner import TextCallScanner
from app.toolcalls.recovery.spec import Tools


def recover(text: str, tools: Tools, mode: str) -> Recovered:
    """Runs the stream scanner over the whole text, so a streamed answer and the same answer
    sent whole can never disagree."""
    scanner = TextCallScanner(tools, mode)
    return fold([*scanner.feed(text), *scanner.finish()])


def strip_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, rest): a leading `<think>...</think>` split off, under every recover mode;
    an unclosed `<think>` makes the rest of the text reasoning."""
    scanner = TextCallScanner({}, "off")
    events = [*scanner.feed(text), *scanner.finish()]
    rest = "".join(event.text for event in events if isinstance(event, Text))
    return fold(events).reasoning, rest
