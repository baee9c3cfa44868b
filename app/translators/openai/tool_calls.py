"""The tool calls of one streamed choice, re-emitted in OpenAI's strict shape whatever the
server sent: each call announced once (index, id, type, name), then only argument fragments.

Servers disagree on nearly every field of a tool-call delta (PROTOCOLS.md §D #1-#12), so each
upstream entry is first routed to a *slot* (one call as the client sees it): by id, then by
index, then to the call in progress. Entries already in the strict shape are relayed as they
came; only the others are rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.translators.openai.fields import arguments_text, is_complete_json

ToolDelta = dict[str, Any]
"""One entry of a delta's `tool_calls`."""
OPENAI_KEYS = frozenset({"index", "id", "type", "function"})
"""An entry's other keys are a server's own (Gemini's `extra_content.google.thought_signature`,
which Gemini 3 needs back with the call) and travel on with the call."""


class _Slot:
    """One call as the client sees it. Its output index is given when it is announced, so a
    call whose name has not come yet (§D #9) leaves no hole in the client's indexes."""

    __slots__ = ("call_id", "fragments", "name", "output_index", "upstream_index")

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.name: str | None = None
        self.fragments: list[str] = []
        self.output_index: int | None = None
        self.upstream_index: int | None = None  # the first the server gave it

    def arguments(self) -> str:
        return "".join(self.fragments)


class ToolCalls:
    """Routes and repairs the `tool_calls` entries of one choice."""

    __slots__ = ("_active", "_announced", "_by_id", "_by_index", "_id_prefix")

    def __init__(self, id_prefix: str) -> None:
        self._id_prefix = id_prefix
        self._by_id: dict[str, _Slot] = {}
        self._by_index: dict[int, _Slot] = {}
        self._active: _Slot | None = None
        self._announced: list[_Slot] = []

    @property
    def called(self) -> bool:
        """Whether the client has been shown any call (so the finish must say `tool_calls`)."""
        return bool(self._announced)

    def feed(self, entries: list[Any]) -> list[list[ToolDelta]] | None:
        """None when `entries` are already strict: relay them as they came. Otherwise the
        repaired entries, grouped into the deltas they must travel in (none, one or more)."""
        if len(entries) == 1:  # what nearly every server sends
            repaired = self._repair(entries[0])
            return None if repaired is None else _group(repaired)
        strict = True
        tool_deltas: list[ToolDelta] = []
        for entry in entries:
            repaired = self._repair(entry)
            if repaired is None:
                tool_deltas.append(entry)
            else:
                strict = False
                tool_deltas += repaired
        if strict and len({entry["index"] for entry in entries}) == len(entries):
            return None
        return _group(tool_deltas)

    def close(self) -> list[ToolDelta]:
        """What the choice owes when it finishes: `"{}"` for calls whose arguments never came,
        since strict tools `json.loads` them and `""` fails (PROTOCOLS.md A.8). A call whose
        name never came cannot be shown and is dropped."""
        owed = []
        for slot in self._announced:
            if not any(slot.fragments):
                slot.fragments.append("{}")
                owed.append(_arguments_delta(slot, "{}"))
        return owed

    def take_fragment(self, entries: list[Any]) -> Callable[[str], None] | None:
        """The hot path: whether `entries` is just the next `{index, function: {arguments}}`
        of an announced call, in which case it is recorded and goes out as it came. Returns
        what records the next fragment of the same call, if nothing else comes between."""
        entry = entries[0] if len(entries) == 1 else None
        if type(entry) is not dict or len(entry) != 2:
            return None
        index = entry.get("index")
        function = entry.get("function")
        slot = self._by_index.get(index) if type(index) is int else None
        if slot is None or slot.output_index != index or type(function) is not dict:
            return None
        fragment = function.get("arguments")
        if len(function) != 1 or type(fragment) is not str:
            return None
        slot.fragments.append(fragment)
        self._active = slot
        return slot.fragments.append

    def _repair(self, entry: Any) -> list[ToolDelta] | None:
        """None if the entry is strict as it stands (its index may be fixed in place)."""
        if type(entry) is not dict:
            return []
        function = entry.get("function")
        if type(function) is not dict:
            function = {}
        call_id = entry.get("id")
        if not call_id or type(call_id) is not str:
            call_id = None
        name = function.get("name")
        if not name or type(name) is not str:
            name = None  # vLLM-derived parsers and OCI repeat `"name": ""` (§D #7)
        arguments = arguments_text(function.get("arguments"))
        slot = self._route(entry.get("index"), call_id, name, arguments)
        if slot.output_index is None:
            return self._announce(slot, entry, function, name, arguments)
        if name and arguments and slot.fragments and entry.get("index") != slot.upstream_index:
            arguments = _unseen_part(slot.arguments(), arguments)  # a re-sent call (§D #5)
        if arguments:
            slot.fragments.append(arguments)
        if (
            len(function) == 1
            and type(function.get("arguments")) is str
            and len(entry) == 1 + ("index" in entry)
        ):
            entry["index"] = slot.output_index  # no index (§D #2) or a reused one (#3, #4)
            return None
        extras = _extras(entry)
        return [{**_arguments_delta(slot, arguments), **extras}] if arguments or extras else []

    def _route(self, index: Any, call_id: str | None, name: str | None, arguments: str) -> _Slot:
        """The slot an entry belongs to (PROTOCOLS.md §D, normalizer step 2)."""
        if type(index) is not int:
            index = None
        elif call_id is None and name is None:
            slot = self._by_index.get(index)
            if slot is not None:  # a plain fragment: by far the most common entry
                self._active = slot
                return slot
        slot = self._by_id.get(call_id) if call_id is not None else None
        if slot is None:
            slot = self._place(index, call_id, name, arguments)
        if index is not None:
            self._by_index[index] = slot
            if slot.upstream_index is None:
                slot.upstream_index = index
        self._active = slot
        return slot

    def _place(
        self, index: int | None, call_id: str | None, name: str | None, arguments: str
    ) -> _Slot:
        """For an entry with no known id: the call its index (or, with no index, the call in
        progress) names, unless the entry opens a new call."""
        slot = self._active if index is None else self._by_index.get(index)
        if slot is None and index is not None and call_id is None and name is None:
            # DeepSeek behind some gateways sends a call's tail under a new index (§D #4).
            active = self._active
            if active is not None and not is_complete_json(active.arguments()):
                slot = active
        if slot is None or _starts_new_call(slot, call_id, name, arguments):
            slot = _Slot()
        if call_id is not None:
            self._by_id[call_id] = slot
            if slot.call_id is None:
                slot.call_id = call_id  # the first id wins: OCI sends a new one per delta (§D #8)
        return slot

    def _announce(
        self,
        slot: _Slot,
        entry: ToolDelta,
        function: dict[str, Any],
        name: str | None,
        arguments: str,
    ) -> list[ToolDelta] | None:
        """A call's first delta, once its name is known: the only one with id, type and name.
        Arguments that came with it (Ollama and Groq send whole calls, §D #1) follow in a
        delta of their own, as clients that expect `arguments: ""` first need."""
        if name and slot.name is None:
            slot.name = name
        if arguments:
            slot.fragments.append(arguments)
        if slot.name is None:
            return []  # buffered until the name comes (§D #9)
        slot.output_index = len(self._announced)
        self._announced.append(slot)
        if slot.call_id is None:
            slot.call_id = f"{self._id_prefix}{slot.output_index}"
        if not slot.fragments and _is_strict_header(entry, function, slot):
            return None
        header = {
            "index": slot.output_index,
            "id": slot.call_id,
            "type": "function",
            "function": {"name": slot.name, "arguments": ""},
            **_extras(entry),
        }
        buffered = slot.arguments()
        return [header, _arguments_delta(slot, buffered)] if buffered else [header]


def _starts_new_call(slot: _Slot, call_id: str | None, name: str | None, arguments: str) -> bool:
    """Whether an entry routed to `slot` by index (or as the call in progress) opens a new call
    instead. Ollama and LiteLLM's ollama_chat give every call index 0 (§D #3) while OCI gives
    every fragment a new id (#8): a different name, or more arguments for a call whose
    arguments are already whole JSON, tells them apart."""
    if name and slot.name and name != slot.name:
        return True
    if not name and not arguments:
        return False  # nothing to add: a repeated header at most
    if call_id is None and (not name or not arguments):
        return False  # a bare fragment, or the same name repeated on a header
    if not name and not arguments.lstrip().startswith("{"):
        return False  # cannot open a call's arguments; spares OCI a parse per fragment
    return is_complete_json(slot.arguments())


def _is_strict_header(entry: ToolDelta, function: dict[str, Any], slot: _Slot) -> bool:
    return (
        entry.get("index") == slot.output_index
        and entry.get("id") == slot.call_id
        and entry.get("type") == "function"
        and function.get("name") == slot.name
        and function.get("arguments") == ""
    )


def _unseen_part(sent: str, resent: str) -> str:
    """LocalAI re-sends a call it already streamed, whole or in part, under the same id at
    other indexes (§D #5): what such a re-send adds beyond the arguments already sent. (Servers
    that repeat id and name on every fragment keep one index, so their fragments never get
    here.)"""
    if resent.startswith(sent):
        return resent[len(sent) :]
    return "" if sent.startswith(resent) else resent


def _extras(entry: ToolDelta) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key not in OPENAI_KEYS}


def _arguments_delta(slot: _Slot, fragment: str) -> ToolDelta:
    return {"index": slot.output_index, "function": {"arguments": fragment}}


def _group(tool_deltas: list[ToolDelta]) -> list[list[ToolDelta]]:
    """Repaired entries -> the deltas they travel in. One entry per index per delta: openai-python
    keeps two entries with the same index in one delta apart and orphans fragments (vLLM with
    speculative decoding, §D #6), so a call's fragments are merged and its announcement
    and arguments go in separate deltas. An announcement opens a new delta, so calls follow
    one another as OpenAI streams them."""
    groups: list[list[ToolDelta]] = []
    current: dict[int, ToolDelta] = {}
    for tool_delta in tool_deltas:
        index = tool_delta["index"]
        previous = current.get(index)
        if previous is not None and len(previous) == len(tool_delta) == 2:  # two fragments
            previous["function"]["arguments"] += tool_delta["function"]["arguments"]
            continue
        if not groups or previous is not None or ("id" in tool_delta and current):
            groups.append([])
            current = {}
        groups[-1].append(tool_delta)
        current[index] = tool_delta
    return groups
