"""Feeding the scanner in pieces, and the ways to cut a text into pieces."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from app.toolcalls.recovery import Event, Reasoning, Text, TextCallScanner


def scan(pieces: list[str], tools: dict[str, Any], mode: str) -> list[Event]:
    scanner = TextCallScanner(tools, mode)
    events = [event for piece in pieces for event in scanner.feed(piece)]
    return joined([*events, *scanner.finish()])


def joined(events: list[Event]) -> list[Event]:
    """Adjacent texts (and adjacent reasonings) joined: how they were cut is not a difference."""
    out: list[Event] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, Text) and isinstance(last, Text):
            out[-1] = Text(last.text + event.text)
        elif isinstance(event, Reasoning) and isinstance(last, Reasoning):
            out[-1] = Reasoning(last.text + event.text)
        else:
            out.append(event)
    return out


def chunks(text: str, size: int) -> list[str]:
    """Fixed-size deltas, as upstreams that stream a few characters (or tokens) at a time do."""
    return [text[start : start + size] for start in range(0, len(text), size)]


def splits(text: str, seed: str) -> Iterator[list[str]]:
    """One, two and three characters per delta, every two-piece cut, then seeded random
    cuttings (a marker cut in halves is one of the two-piece cuts)."""
    for size in (1, 2, 3):
        yield chunks(text, size)
    for cut in range(1, len(text)):
        yield [text[:cut], text[cut:]]
    rng = random.Random(seed)
    for _ in range(30):
        cuts = sorted(rng.sample(range(1, len(text)), k=min(6, len(text) - 1)))
        yield [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
