"""Streaming recovery: text deltas in; answer text, reasoning and whole tool calls out, the
same events (once adjacent texts are joined) however the text was split into deltas."""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.toolcalls.recovery.events import Call, Event, Reasoning, Text
from app.toolcalls.recovery.modes import specs_for
from app.toolcalls.recovery.spec import ParsedCall, Spec, Tools

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


class _State(enum.Enum):
    TEXT = "text"  # answer text, watching for start markers
    REASONING = "reasoning"  # inside <think>, watching for </think>
    REGION = "region"  # inside a call, buffering until its end
    PASSTHROUGH = "passthrough"  # a call failed: the rest is text, as it was written


class _Decision(enum.Enum):
    HOLD = "hold"
    THINK = "think"
    OPEN = "open"
    TEXT = "text"


@dataclass(slots=True)
class _Region:
    """A call being buffered: its parts so far and the last characters an end marker split
    across deltas may have started in (so the end search never re-reads the whole call)."""

    spec: Spec
    parts: list[str]
    tail: str = ""
    undecided: bool = field(default=False)


class TextCallScanner:
    """Recovers text-written tool calls from a stream of content deltas.

    Plain text is passed on as soon as it cannot be the start of a marker (at most one
    marker's length is held back); a call is buffered whole and emitted once its end marker
    arrives, or at `finish()` for formats without one. A call that does not parse, or names a
    tool that was not offered, is given back as text, with everything after it: calls already
    emitted cannot be taken back, and later text is not guessed at. `<think>` at the start of
    the answer is reasoning until `</think>` (or the end).
    """

    def __init__(self, tools: Tools, mode: str) -> None:
        specs = specs_for(mode)
        self._tools = tools
        self._floating = _by_first_character(spec for spec in specs if not spec.anchored)
        self._at_start = _by_first_character(specs)  # anchored formats apply here too
        floating = "".join(self._floating)
        self._candidates = re.compile(f"[{re.escape(floating)}]") if floating else None
        self._state = _State.TEXT
        self._pending = ""
        self._region: _Region | None = None
        self._answer_start = True  # anchored formats are still possible
        self._stream_start = True  # a <think> block may still open
        self._drop_ws = False  # whitespace after </think> or a call is layout, not content
        self._called = False  # a section-closing token only closes something after a call

    def feed(self, delta: str) -> list[Event]:
        """Events decided by this delta; undecided text stays held until a later call."""
        events: list[Event] = []
        self._pending += delta
        while self._step(events):
            pass
        return events

    def finish(self) -> list[Event]:
        """Flush at the end of the stream: held text goes out as text, an open end-markerless
        call is parsed, an unclosed one is given back as text."""
        events: list[Event] = []
        if self._state is _State.REGION and self._region is not None:
            if self._region.spec.end is None:
                self._close(events, self._region, closed=False)
            else:
                _emit_text(events, "".join(self._region.parts))
        elif self._take_leading_ws():
            if self._state is _State.REASONING:
                events.append(Reasoning(self._pending))
            else:
                _emit_text(events, self._pending)
        self._pending = ""
        self._state = _State.PASSTHROUGH
        return events

    def _step(self, events: list[Event]) -> bool:
        """One decision; True when the state changed and the pending text needs another look."""
        if self._state is _State.REGION:
            return self._step_region(events)
        if not self._take_leading_ws():
            return False
        if self._state is _State.REASONING:
            return self._step_reasoning(events)
        if self._state is _State.PASSTHROUGH:
            _emit_text(events, self._pending)
            self._pending = ""
            return False
        if self._answer_start:
            return self._step_answer_start(events)
        return self._scan(events)

    def _take_leading_ws(self) -> bool:
        """Drop whitespace owed to `_drop_ws`; False when nothing is left to look at."""
        if self._drop_ws:
            self._pending = self._pending.lstrip()
            if self._pending:
                self._drop_ws = False
        return bool(self._pending)

    def _step_answer_start(self, events: list[Event]) -> bool:
        """At the first non-whitespace character: `<think>`, a marker, an anchored format
        (bare JSON, pythonic list, ```json fence) or plain text."""
        text = self._pending
        first = len(text) - len(text.lstrip())
        if first == len(text):
            return False
        decision, spec = self._decide_start(text, first)
        if decision is _Decision.HOLD:
            return False
        self._answer_start = self._stream_start = False
        if decision is _Decision.THINK:
            self._pending = text[first + len(THINK_OPEN) :]
            self._state = _State.REASONING
            self._drop_ws = True
        elif spec is not None:
            _emit_text(events, text[:first])
            self._open(spec, text[first:])
        return True

    def _decide_start(self, text: str, first: int) -> tuple[_Decision, Spec | None]:
        """`<think>` first (it is longer than anything a prefix of it could open), then the
        longest start marker, anchored ones included, by the same rule as mid-text."""
        rest = text[first:]
        if self._stream_start:
            if rest.startswith(THINK_OPEN):
                return _Decision.THINK, None
            if THINK_OPEN.startswith(rest):
                return _Decision.HOLD, None
        spec, partial = _match(self._at_start, text, first)
        if spec is not None:
            return _Decision.OPEN, spec
        return (_Decision.HOLD if partial else _Decision.TEXT), None

    def _scan(self, events: list[Event]) -> bool:
        """Pass text on up to the first marker (opened) or marker prefix (held)."""
        text = self._pending
        if self._candidates is not None:
            for candidate in self._candidates.finditer(text):
                spec, partial = _match(self._floating, text, candidate.start())
                if spec is not None or partial:
                    _emit_text(events, text[: candidate.start()])
                    self._pending = text[candidate.start() :]
                    if spec is None:
                        return False
                    self._open(spec, self._pending)
                    return True
        _emit_text(events, text)
        self._pending = ""
        return False

    def _open(self, spec: Spec, text: str, *, decided: bool = False) -> None:
        self._state = _State.REGION
        undecided = spec.viable is not None and not decided
        self._region = _Region(spec, [spec.start], undecided=undecided)
        self._pending = text[len(spec.start) :]

    def _step_region(self, events: list[Event]) -> bool:
        region = self._region
        if region is None:
            return False
        delta, self._pending = self._pending, ""
        if region.undecided:
            region.parts.append(delta)
            return self._check_viable(events, region)
        if region.spec.end is None:
            region.parts.append(delta)
            return False
        end = region.spec.end
        window = region.tail + delta
        found = window.find(end)
        if found < 0:
            region.parts.append(delta)
            region.tail = window[-(len(end) - 1) :] if len(end) > 1 else ""
            return False
        cut = found + len(end) - len(region.tail)
        region.parts.append(delta[:cut])
        self._pending = delta[cut:]
        self._close(events, region, closed=True)
        return True

    def _check_viable(self, events: list[Event], region: _Region) -> bool:
        """Decide from a region's first characters whether it can be a call. If it can, its
        body is searched for the end marker from the start; if not, the start marker is text
        and what follows is scanned again (it may still hold a marker)."""
        spec = region.spec
        raw = "".join(region.parts)
        verdict = spec.viable(raw) if spec.viable is not None else True
        if verdict is None:
            return False
        if verdict:
            self._open(spec, raw, decided=True)
            return True
        _emit_text(events, spec.start)
        self._pending = raw[len(spec.start) :]
        self._region = None
        self._state = _State.TEXT
        return True

    def _close(self, events: list[Event], region: _Region, *, closed: bool) -> None:
        """Emit the region's calls, or give it back as text and stop recovering."""
        spec = region.spec
        raw = "".join(region.parts)
        self._region = None
        self._state = _State.TEXT
        if spec.closer and not self._called:
            _emit_text(events, raw)
            return
        body = raw if spec.keep_start else raw[len(spec.start) :]
        if closed and spec.end:
            body = body[: -len(spec.end)]
        calls = self._accept(spec.parse(body, self._tools))
        if calls is None:
            _emit_text(events, raw)
            self._state = _State.PASSTHROUGH
            return
        events.extend(calls)
        self._drop_ws = True
        self._called = self._called or bool(calls)

    def _accept(self, parsed: list[ParsedCall] | None) -> list[Call] | None:
        """Only calls to offered tools, with arguments that are JSON (a pythonic set or bytes,
        or NaN, is not)."""
        if parsed is None:
            return None
        calls: list[Call] = []
        for name, arguments in parsed:
            if name not in self._tools:
                return None
            try:
                encoded = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):
                return None
            calls.append(Call(name, encoded))
        return calls

    def _step_reasoning(self, events: list[Event]) -> bool:
        text = self._pending
        found = text.find(THINK_CLOSE)
        if found >= 0:
            _emit_reasoning(events, text[:found])
            self._pending = text[found + len(THINK_CLOSE) :]
            self._state = _State.TEXT
            self._answer_start = self._drop_ws = True
            return True
        held = _partial_suffix(text, THINK_CLOSE)
        _emit_reasoning(events, text[: len(text) - held])
        self._pending = text[len(text) - held :]
        return False


def _by_first_character(specs: Iterable[Spec]) -> dict[str, tuple[Spec, ...]]:
    """Specs indexed by their start's first character, longest start first, as `_match`
    needs them (under `auto`, `[` and `[TOOL_CALLS]` share a first character)."""
    index: dict[str, list[Spec]] = {}
    for spec in sorted(specs, key=lambda spec: -len(spec.start)):
        index.setdefault(spec.start[0], []).append(spec)
    return {first: tuple(group) for first, group in index.items()}


def _match(index: Mapping[str, tuple[Spec, ...]], text: str, at: int) -> tuple[Spec | None, bool]:
    """The longest start marker at `at`, or (None, True) to hold while a marker longer than
    any that matches may still complete in a later delta.

    Opening a shorter marker as soon as it matches would make the result depend on where a
    delta ended: a lone `[` would open a pythonic list (and fail) where the whole text opens
    `[TOOL_CALLS]`. Longest first, so the first full match has no longer rival left."""
    for spec in index.get(text[at], ()):
        if text.startswith(spec.start, at):
            return spec, False
        if len(text) - at < len(spec.start) and spec.start.startswith(text[at:]):
            return None, True
    return None, False


def _emit_text(events: list[Event], text: str) -> None:
    if text:
        events.append(Text(text))


def _emit_reasoning(events: list[Event], text: str) -> None:
    if text:
        events.append(Reasoning(text))


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest end of `text` that is a proper prefix of `marker`."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
