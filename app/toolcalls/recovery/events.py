"""The scanner's output events and the non-stream result they fold into."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Text:
    """Answer text (the message's `content`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Text the model wrote inside `<think>...</think>` (goes to `reasoning_content`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """One recovered call to an offered tool; `arguments` is a JSON object as a string."""

    name: str
    arguments: str


Event = Text | Reasoning | Call


@dataclass(frozen=True, slots=True)
class Recovered:
    """A whole answer split into content, reasoning and calls, as a non-stream response needs."""

    content: str | None
    reasoning: str | None
    calls: list[Call]


def fold(events: Iterable[Event]) -> Recovered:
    """Fold events into one answer; whitespace-only content or reasoning is None, as vLLM's
    parsers give `content: null` when nothing but the calls was said."""
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[Call] = []
    for event in events:
        if isinstance(event, Text):
            texts.append(event.text)
        elif isinstance(event, Reasoning):
            thoughts.append(event.text)
        else:
            calls.append(event)
    return Recovered(_none_if_blank("".join(texts)), _none_if_blank("".join(thoughts)), calls)


def _none_if_blank(text: str) -> str | None:
    return text if text.strip() else None
