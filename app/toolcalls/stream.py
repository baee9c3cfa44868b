"""A stream's tool calls, audited as they pass: a wrapper around any kind's stream translator,
seeing only the OpenAI chunks it makes.

It does three things, each only when the request's plan asks for it:
- recovery: content deltas go through the text-call scanner; text flows on once it cannot be
  a marker, recovered calls go out as proper tool-call deltas (indexes after the calls already
  announced), `finish_reason` becomes `tool_calls`;
- audit: every call's name and argument fragments are collected, and all calls are classified
  when the choice finishes;
- holding (on_invalid `error` / `retry` / `fallback`): tool-call deltas, and chunks with
  nothing to show yet (the role chunk), are kept back until the calls are validated, so a bad
  call raises InvalidToolCall before anything reached the client when the answer is only calls
  (the relay then still answers with a real status, and a retry or a fallback can go unseen);
  text is never held. Once the relay says the stream is committed (text reached the client),
  `fallback` can no longer ask elsewhere: its held calls go out as `pass` would send them;
  `error` and `retry` still refuse (the stream's error event).

A chunk with nothing to change goes out as the same object: the common text or argument chunk
costs a few dict lookups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import InvalidToolCall
from app.sse import SSEEvent
from app.toolcalls.audit import AuditedCall, Source, ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.toolcalls.recovery import Call, Event, Reasoning, TextCallScanner, new_call_id
from app.toolcalls.validation import Validators
from app.translators.base import Chunk, PassCheck, Repeat, StreamTranslator
from app.translators.chunks import ChunkBuilder


class _Slot:
    """One call as the client sees it: its name and argument fragments so far."""

    __slots__ = ("arguments", "name", "source")

    def __init__(self, name: str, source: Source) -> None:
        self.name = name
        self.source: Source = source
        self.arguments: list[str] = []


class AuditedStream:
    __slots__ = (
        "_builder",
        "_closed",
        "_committed",
        "_held",
        "_holding",
        "_inner",
        "_inner_passes",
        "_on_audit",
        "_plan",
        "_renumber",
        "_scanner",
        "_shown",
        "_slots",
        "_validators",
        "audit",
    )

    def __init__(
        self,
        inner: StreamTranslator,
        plan: ToolPlan,
        validators: Validators,
        on_audit: Callable[[ToolCallAudit], None] | None = None,
    ) -> None:
        self._inner = inner
        self._plan = plan
        self._validators = validators
        self._on_audit = on_audit
        self._scanner = TextCallScanner(plan.tools, plan.recover) if plan.recover else None
        self._builder: ChunkBuilder | None = None
        self._slots: list[_Slot] = []
        self._renumber: dict[int, int] = {}  # upstream call index -> client call index
        self._held: list[Chunk] = []
        self._holding = plan.holds_calls  # tool-call deltas wait until the calls are validated
        self._shown = not plan.holds_calls  # whether chunks with nothing to show may go out
        self._closed = False
        self._committed = False  # something reached the client: too late to ask elsewhere
        self._inner_passes: PassCheck | None = None
        self.audit = ToolCallAudit()

    def feed(self, event: SSEEvent) -> list[Chunk]:
        out: list[Chunk] = []
        for chunk in self._inner.feed(event):
            self._take(chunk, out)
        return out

    def finish(self) -> list[Chunk]:
        out: list[Chunk] = []
        for chunk in self._inner.finish():
            self._take(chunk, out)
        if not self._closed:  # the upstream never finished the choice: nothing is validated
            self._close(None, out)
        return out

    def usage(self) -> dict[str, Any] | None:
        return self._inner.usage()

    def committed(self) -> None:
        """Called by the relay once the stream's first bytes are out (app/relay/streaming.py):
        from then on a bad call is refused only by a policy that refuses it even then."""
        self._committed = True

    def fast_path(self) -> PassCheck | None:
        """The inner translator's, when nothing here would change a chunk it passes: calls
        neither recovered from text nor held (on_invalid `pass`)."""
        inner = getattr(self._inner, "fast_path", None)
        if inner is None or self._scanner is not None or self._holding:
            return None
        self._inner_passes = inner()
        return None if self._inner_passes is None else self._passes

    def _passes(self, chunk: Chunk) -> Repeat | None:
        """As `_take` would see it: text goes out as it is, an argument fragment of a call
        whose number the client already knows is collected for the audit."""
        if self._builder is None or self._closed:
            return None
        try:
            entries = chunk["choices"][0]["delta"].get("tool_calls")
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        if entries:
            try:
                index = entries[0]["index"]
            except (KeyError, IndexError, TypeError):
                return None
            if type(index) is not int or self._renumber.get(index) != index:
                return None
        assert self._inner_passes is not None
        inner_repeat = self._inner_passes(chunk)
        if inner_repeat is None or not entries:
            return inner_repeat
        # The translator checked its shape: one entry, function.arguments only.
        collect = self._slots[entries[0]["index"]].arguments.append
        if fragment := entries[0]["function"]["arguments"]:
            collect(fragment)

        def repeat(fragment: str) -> None:
            inner_repeat(fragment)
            if fragment:
                collect(fragment)

        return repeat

    # --- one upstream chunk ------------------------------------------------------------------

    def _take(self, chunk: Chunk, out: list[Chunk]) -> None:
        choices = chunk.get("choices")
        if not choices:  # the usage chunk, always last: the choice is over
            if not self._closed:
                self._close(None, out)
            out.append(chunk)
            return
        if self._builder is None:
            self._builder = ChunkBuilder(chunk["id"], chunk["created"], chunk["model"])
        choice = choices[0]
        delta = choice.get("delta") or {}
        content = delta.get("content")
        tool_deltas = delta.get("tool_calls")
        finish = choice.get("finish_reason")
        if self._scanner is not None and content:
            events = self._scanner.feed(content)
            if not _unchanged(events, content):
                self._split(chunk, choice, delta, events, out)
                return
        if tool_deltas:
            chunk = self._track(chunk, choice, delta, tool_deltas)
        if finish is not None:
            self._close(chunk, out)
        elif tool_deltas and self._holding:
            self._held.append(chunk)
        else:
            self._show(chunk, out, showing=bool(content or delta.get("reasoning_content")))

    def _split(
        self,
        chunk: Chunk,
        choice: dict[str, Any],
        delta: dict[str, Any],
        events: list[Event],
        out: list[Chunk],
    ) -> None:
        """A content delta the scanner changed: the rest of the chunk (role, calls, finish),
        then what its text became."""
        rest = {key: value for key, value in delta.items() if key != "content"}
        if "role" in rest:
            rest["content"] = ""
            self._show(_with_delta(chunk, choice, rest, None), out, showing=False)
            rest = {key: value for key, value in rest.items() if key not in ("role", "content")}
        self._emit_events(events, out)
        if rest or choice.get("finish_reason") is not None:
            self._take(_with_delta(chunk, choice, rest, choice.get("finish_reason")), out)

    def _track(
        self, chunk: Chunk, choice: dict[str, Any], delta: dict[str, Any], tool_deltas: Any
    ) -> Chunk:
        """Collects each structured call's name and fragments; renumbers indexes when
        recovered calls took the numbers first (copying the chunk only then)."""
        renumbered = []
        for entry in tool_deltas:
            upstream_index = entry.get("index", 0)
            index = self._renumber.get(upstream_index)
            if index is None:
                index = self._renumber[upstream_index] = len(self._slots)
                function = entry.get("function") or {}
                self._slots.append(_Slot(function.get("name") or "", "structured"))
            fragment = (entry.get("function") or {}).get("arguments")
            if fragment:
                self._slots[index].arguments.append(fragment)
            renumbered.append(entry if index == upstream_index else {**entry, "index": index})
        if all(new is old for new, old in zip(renumbered, tool_deltas, strict=True)):
            return chunk
        return _with_delta(chunk, choice, {**delta, "tool_calls": renumbered}, None)

    # --- what goes out -----------------------------------------------------------------------

    def _emit_events(self, events: list[Event], out: list[Chunk]) -> None:
        builder = self._builder
        assert builder is not None
        for event in events:
            if isinstance(event, Call):
                index = len(self._slots)
                slot = _Slot(event.name, "recovered")
                slot.arguments.append(event.arguments)
                self._slots.append(slot)
                start = builder.tool_call_start(index, new_call_id(), event.name)
                arguments = builder.tool_call_arguments(index, event.arguments)
                if self._holding:
                    self._held += (start, arguments)
                else:
                    out += (start, arguments)
            elif isinstance(event, Reasoning):
                self._show(builder.reasoning(event.text), out, showing=True)
            elif event.text:
                self._show(builder.content(event.text), out, showing=True)

    def _show(self, chunk: Chunk, out: list[Chunk], *, showing: bool) -> None:
        """Out now; while holding, a chunk with nothing to show waits (it would commit the
        stream) until something does: text, or the validated calls."""
        if self._shown:
            out.append(chunk)
        elif showing:
            self._shown = True
            out += self._held_empties()
            out.append(chunk)
        else:
            self._held.append(chunk)

    def _held_empties(self) -> list[Chunk]:
        """Once text shows, the role chunk held so far goes before it; held calls stay."""
        empties = [chunk for chunk in self._held if not _has_tool_calls(chunk)]
        self._held = [chunk for chunk in self._held if _has_tool_calls(chunk)]
        return empties

    def _close(self, finish_chunk: Chunk | None, out: list[Chunk]) -> None:
        """The choice is over: the scanner's tail, then every call classified (InvalidToolCall
        when the policy refuses a bad one, as it may once committed), then the held chunks and
        the finish."""
        self._closed = True
        if self._scanner is not None and self._builder is not None:
            self._emit_events(self._scanner.finish(), out)
        recovered = False
        for slot in self._slots:
            arguments = "".join(slot.arguments)
            verdict = self._validators.classify(slot.name, arguments, self._plan.tools)
            self.audit.calls.append(AuditedCall(slot.name, arguments, slot.source, verdict))
            recovered = recovered or slot.source == "recovered"
        if self._on_audit is not None:
            self._on_audit(self.audit)
        plan = self._plan
        refuses = not self._committed or plan.refuses_once_committed
        if plan.holds_calls and refuses and self.audit.invalid:
            raise InvalidToolCall(self.audit.problems())
        out += self._held
        self._held = []
        self._shown = True
        self._holding = False
        if finish_chunk is not None:
            if recovered and finish_chunk["choices"][0]["finish_reason"] != "tool_calls":
                choice = finish_chunk["choices"][0]
                finish_chunk = _with_delta(finish_chunk, choice, choice["delta"], "tool_calls")
            out.append(finish_chunk)


def _unchanged(events: list[Event], content: str) -> bool:
    """The scanner passed the delta on whole: the chunk can go out as it came."""
    if len(events) != 1:
        return False
    only = events[0]
    return not isinstance(only, Call | Reasoning) and only.text == content


def _has_tool_calls(chunk: Chunk) -> bool:
    choices = chunk.get("choices")
    return bool(choices and choices[0].get("delta", {}).get("tool_calls"))


def _with_delta(
    chunk: Chunk, choice: dict[str, Any], delta: dict[str, Any], finish_reason: Any
) -> Chunk:
    """A copy of the chunk with its one choice's delta (and finish_reason) replaced."""
    new_choice = {**choice, "delta": delta, "finish_reason": finish_reason}
    return {**chunk, "choices": [new_choice]}
