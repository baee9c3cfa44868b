"""Streams from OpenAI-compatible servers, relayed in OpenAI's strict dialect: a chunk that keeps
the contract goes out as it came with only `model` rewritten; one that breaks it in a known way
(PROTOCOLS.md §D) is repaired minimally, in place where it can be.

The common chunk (text, or one argument fragment) costs a handful of dict lookups: anything
unusual is detected by key presence and handled off that path.
"""

from __future__ import annotations

from typing import Any

from app.errors import UpstreamProtocolError, UpstreamStreamError
from app.sse import SSEEvent
from app.translators.base import (
    EDITED,
    Chunk,
    PassCheck,
    Repeat,
    ResponseContext,
    load_json_object,
)
from app.translators.openai.fields import (
    call_id_prefix,
    complete_usage,
    final_finish_reason,
    rename_reasoning,
    str_or_none,
)
from app.translators.openai.tool_calls import ToolCalls

CHUNK_OBJECT = "chat.completion.chunk"
AZURE_FILTER_KEYS = ("content_filter_results", "content_filter_offsets")
"""Azure's annotations on a choice (PROTOCOLS.md §D #23): OpenAI sends neither."""
UNPINNED: Any = object()
"""The stream's id before its first chunk: unequal to anything, a missing id included."""
ChoiceDict = dict[str, Any]


class _Choice:
    """What one choice (`choices[].index`) has shown the client so far."""

    __slots__ = ("finished", "role_sent", "tool_calls")

    def __init__(self, id_prefix: str) -> None:
        self.role_sent = False
        self.finished = False
        self.tool_calls = ToolCalls(id_prefix)


class OpenAIStream:
    """One upstream stream -> the client's chunks. Keeps the first chunk id and `created` (OCI
    and llama.cpp changed them per chunk, §D #8), each choice's calls, and the last usage seen."""

    __slots__ = (
        "_choices",
        "_created",
        "_ctx",
        "_done",
        "_filtered",
        "_id",
        "_model",
        "_usage",
        "_usage_chunk",
    )

    def __init__(self, ctx: ResponseContext) -> None:
        self._ctx = ctx
        self._model = ctx.model
        self._id: Any = UNPINNED
        self._created: Any = UNPINNED
        self._choices: dict[Any, _Choice] = {}  # by `choices[].index`
        self._done = False
        self._usage: dict[str, Any] | None = None
        self._usage_chunk: Chunk | None = None
        target = ctx.target
        # Azure's content-filter annotations, removed (issue 30) so strict clients see OpenAI's
        # stream; the openai kind relays a compatible server's extra keys as they came.
        self._filtered = target is not None and target.provider.kind == "azure"

    def feed(self, event: SSEEvent) -> list[Chunk]:
        if self._done:
            return []  # openai-python stops reading at [DONE]; so do we
        if event.data == "[DONE]":
            self._done = True
            return self._closing_chunks()
        openai_chunk = load_json_object(event.data, "a stream chunk")
        if openai_chunk.get("error"):
            raise _stream_error(openai_chunk["error"])
        if openai_chunk.get("object") != CHUNK_OBJECT and not _is_chunk(openai_chunk):
            return []
        if self._filtered and "_filter_" in event.data:
            _strip_filter_results(openai_chunk)
        openai_chunk["model"] = self._model
        if openai_chunk.get("usage") is not None or "x_groq" in openai_chunk:
            self._keep_usage(openai_chunk)
        choices = openai_chunk.get("choices")
        if not choices:
            # The usage chunk (sent at the end), or Azure's prompt_filter_results (§D #23).
            return []
        if openai_chunk.get("id") != self._id or openai_chunk.get("created") != self._created:
            self._pin(openai_chunk)
        return self._relay(openai_chunk, choices)

    def fast_path(self) -> PassCheck:
        """The check the relay's pass-through asks of each decoded chunk (its fast path)."""
        return self._filtered_passes if self._filtered else self._passes

    def _filtered_passes(self, openai_chunk: Chunk) -> Repeat | None:
        """Azure's: a chunk that passes but for its filter annotations passes without them,
        marked EDITED (issue 30: Azure annotates every delta; the slow way cost ~6x)."""
        repeat = self._passes(openai_chunk)  # blind to the annotations: the same decision
        if repeat is not None and _strip_filter_results(openai_chunk):
            openai_chunk[EDITED] = True
        return repeat

    def _passes(self, openai_chunk: Chunk) -> Repeat | None:
        """Whether a decoded chunk may go to the client as the upstream wrote it (but for
        `model`): `feed` would change nothing else in it. Records what it takes (an argument
        fragment) exactly as `feed` would, and only then."""
        if (
            self._done
            or openai_chunk.get("id") != self._id
            or openai_chunk.get("created") != self._created
            or openai_chunk.get("object") != CHUNK_OBJECT
            or openai_chunk.get("usage") is not None
            or "x_groq" in openai_chunk
            or openai_chunk.get("error")
        ):
            return None
        choices = openai_chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        return self._choice_passes(choices[0])

    def _choice_passes(self, choice: Any) -> Repeat | None:
        if type(choice) is not dict or choice.get("finish_reason", False) is not None:
            return None
        state = self._choices.get(choice.get("index"))
        delta = choice.get("delta")
        if state is None or state.finished or type(delta) is not dict:
            return None
        if "tool_calls" not in delta:
            return None if "role" in delta or "reasoning" in delta else _records_nothing
        entries = delta["tool_calls"]
        if len(delta) == 1 and type(entries) is list:
            return state.tool_calls.take_fragment(entries)
        return None

    def finish(self) -> list[Chunk]:
        if self._done:
            return []
        # Some compatible servers omit [DONE]; a stream that reached its finish_reason is
        # complete all the same. One that did neither was cut short.
        if not any(choice.finished for choice in self._choices.values()):
            raise UpstreamProtocolError("The upstream stream ended before the answer was complete.")
        self._done = True
        return self._closing_chunks()

    def usage(self) -> dict[str, Any] | None:
        return None if self._usage is None else complete_usage(self._usage)

    def _relay(self, openai_chunk: Chunk, choices: Any) -> list[Chunk]:
        if type(choices) is list and len(choices) == 1 and type(choices[0]) is dict:
            repaired = self._choice(choices[0])  # n = 1: the chunk nearly every stream is made of
            if repaired is None:
                return [openai_chunk]
            return self._with_choices(openai_chunk, choices, [repaired])
        if type(choices) is not list or not all(type(choice) is dict for choice in choices):
            raise UpstreamProtocolError("The upstream sent a chunk whose choices are not objects.")
        repairs = [self._choice(choice) for choice in choices]
        if all(repaired is None for repaired in repairs):
            return [openai_chunk]
        return self._with_choices(openai_chunk, choices, repairs)

    def _with_choices(
        self,
        openai_chunk: Chunk,
        choices: list[ChoiceDict],
        repairs: list[list[ChoiceDict] | None],
    ) -> list[Chunk]:
        """The chunk with its choices repaired: a choice's first replacement stays in it, the
        rest follow in chunks of their own."""
        kept: list[ChoiceDict] = []
        split_off: list[Chunk] = []
        for choice, repaired in zip(choices, repairs, strict=True):
            if repaired is None:
                kept.append(choice)
            elif repaired:
                kept.append(repaired[0])
                split_off += [self._chunk(more) for more in repaired[1:]]
        if not kept:
            return split_off
        openai_chunk["choices"] = kept
        return [openai_chunk, *split_off]

    def _choice(self, choice: ChoiceDict) -> list[ChoiceDict] | None:
        """None when the choice may go out as it stands (the common case); otherwise what
        replaces it, in order: the first stays in this chunk, the rest get chunks of their own."""
        if "finish_reason" not in choice:  # required (nullable); Gemini's and OCI's omit it
            choice["finish_reason"] = None
        state = self._choices.get(choice.get("index"))
        delta = choice.get("delta")
        if state is None or type(delta) is not dict or state.finished:
            return self._unusual_choice(choice)
        if "tool_calls" in delta:
            if len(delta) == 1 and choice.get("finish_reason") is None:
                entries = delta["tool_calls"]
                if type(entries) is list and state.tool_calls.take_fragment(entries):
                    return None  # the next argument fragment of a call, as OpenAI sends it
        elif (
            "role" not in delta and "reasoning" not in delta and choice.get("finish_reason") is None
        ):
            return None  # text, or anything else that needs nothing from us
        return self._repair(state, choice, delta)

    def _unusual_choice(self, choice: ChoiceDict) -> list[ChoiceDict] | None:
        """A choice seen for the first time, without a delta, or after its finish."""
        index = choice.get("index")
        if type(index) is not int:
            choice["index"] = index = 0
        delta = choice.get("delta")
        if type(delta) is not dict:
            if choice.get("finish_reason") is None:
                return []  # nothing to say (e.g. Azure's async content-filter annotations)
            choice["delta"] = delta = {}
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = _Choice(call_id_prefix(self._ctx.completion_id, index))
            # The OpenAI Node SDK's stream helper fails without the role on the first delta.
            delta.setdefault("role", "assistant")
        elif state.finished:
            return []  # one finish per choice, on its last chunk
        return self._repair(state, choice, delta)

    def _repair(
        self, state: _Choice, choice: ChoiceDict, delta: dict[str, Any]
    ) -> list[ChoiceDict] | None:
        emptied = False
        if "role" in delta:
            if state.role_sent:  # Groq, Ollama and OpenRouter repeat it (§D #13)
                del delta["role"]
                emptied = True
            state.role_sent = True
        if "reasoning" in delta:
            rename_reasoning(delta)
        following: list[ChoiceDict] = []
        if "tool_calls" in delta:
            following = self._tool_calls(state, choice, delta)
            emptied = emptied or "tool_calls" not in delta
        # After the deltas, so a call announced in the finish chunk counts (vLLM, §D #16).
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None:
            return self._finish(state, [choice, *following], finish_reason)
        if following:
            return [choice, *following]
        if emptied and all(value is None for value in delta.values()):
            return []  # only a repeated role or a re-sent call was left: nothing to say
        return None

    def _tool_calls(
        self, state: _Choice, choice: ChoiceDict, delta: dict[str, Any]
    ) -> list[ChoiceDict]:
        """Repairs `delta.tool_calls` in place; returns the deltas that must follow it."""
        entries = delta["tool_calls"]
        if not entries or type(entries) is not list:
            del delta["tool_calls"]  # Groq sends `tool_calls: []` on text deltas (§D #13)
            return []
        groups = state.tool_calls.feed(entries)
        if groups is None:
            return []
        if not groups:
            del delta["tool_calls"]
            return []
        delta["tool_calls"] = groups[0]
        index = choice["index"]
        return [
            {"index": index, "delta": {"tool_calls": group}, "finish_reason": None}
            for group in groups[1:]
        ]

    def _finish(
        self, state: _Choice, choices: list[ChoiceDict], upstream_reason: Any
    ) -> list[ChoiceDict] | None:
        """The finish goes on the choice's last delta, after any `"{}"` its calls still owe."""
        state.finished = True
        reason = final_finish_reason(upstream_reason, state.tool_calls.called)
        owed = state.tool_calls.close()
        first, last = choices[0], choices[-1]
        if owed:
            if last["delta"]:
                last = {"index": first["index"], "delta": {}, "finish_reason": None}
                choices.append(last)
            last["delta"]["tool_calls"] = owed
        if last is first and reason == upstream_reason:
            return None
        first["finish_reason"] = None
        last["finish_reason"] = reason
        return choices

    def _closing_chunks(self) -> list[Chunk]:
        """At the end of the stream: a finish for any choice the upstream left open (it sent
        [DONE] without one), then the one usage chunk, if the client asked for it."""
        chunks = []
        for index, state in self._choices.items():
            if not state.finished:
                finish = {"index": index, "delta": {}, "finish_reason": "stop"}
                choices = self._finish(state, [finish], "stop") or [finish]
                chunks += [self._chunk(choice) for choice in choices]
        if self._usage is not None and self._ctx.include_usage:
            chunks.append(self._final_usage_chunk(self._usage))
        return chunks

    def _keep_usage(self, openai_chunk: Chunk) -> None:
        """Usage turns up on every chunk (Together, xAI), on the finish chunk (Fireworks), in
        `x_groq.usage` (Groq) or in its own chunk (OpenAI), §D #17. The last one seen is sent
        once, at the end; a `usage` on a choice chunk would reset openai-python's snapshot."""
        usage = openai_chunk.get("usage")
        if usage is not None:
            if openai_chunk.get("choices"):
                del openai_chunk["usage"]
            else:
                self._usage_chunk = openai_chunk
            if usage and type(usage) is dict:
                self._usage = usage
            return
        x_groq = openai_chunk["x_groq"]
        if type(x_groq) is dict and type(x_groq.get("usage")) is dict:
            self._usage = x_groq["usage"]

    def _final_usage_chunk(self, usage: dict[str, Any]) -> Chunk:
        usage_chunk = self._usage_chunk
        if usage_chunk is not None and usage_chunk["usage"] is usage:
            self._pin(usage_chunk)  # OpenAI's own usage chunk, relayed as it came
            usage_chunk["usage"] = complete_usage(usage)
            return usage_chunk
        return self._chunk(None, usage=complete_usage(usage))

    def _pin(self, openai_chunk: Chunk) -> None:
        """One `id` and `created` for the whole stream: the first chunk's."""
        if self._id is UNPINNED:
            upstream_id = openai_chunk.get("id")
            created = openai_chunk.get("created")
            valid_id = upstream_id and type(upstream_id) is str
            self._id = upstream_id if valid_id else self._ctx.completion_id
            self._created = created if type(created) is int else self._ctx.created
        openai_chunk["id"] = self._id
        openai_chunk["created"] = self._created

    def _chunk(self, choice: ChoiceDict | None, **fields: Any) -> Chunk:
        """A chunk the upstream did not send as such: a piece split off a repaired chunk, a
        finish the upstream left out, or the usage chunk."""
        if self._id is UNPINNED:
            self._pin({})
        return {
            "id": self._id,
            "object": CHUNK_OBJECT,
            "created": self._created,
            "model": self._model,
            "choices": [] if choice is None else [choice],
            **fields,
        }


def _is_chunk(openai_chunk: Chunk) -> bool:
    """Azure marks its content-filter annotations with `object: ""` (openai-python skips them,
    §D #23); a chunk with the field missing or misnamed is still a chunk."""
    if openai_chunk.get("object") == "":
        return False
    openai_chunk["object"] = CHUNK_OBJECT
    return True


def _strip_filter_results(openai_chunk: Chunk) -> bool:
    """Removes Azure's filter annotations, if any: a choice left with neither delta nor finish
    is then dropped as empty, a chunk left with no choices as the prompt's annotation it was."""
    found = openai_chunk.pop("prompt_filter_results", EDITED) is not EDITED
    choices = openai_chunk.get("choices")
    if type(choices) is list:
        for choice in choices:
            if type(choice) is dict:
                for key in AZURE_FILTER_KEYS:
                    found = choice.pop(key, EDITED) is not EDITED or found
    return found


def _stream_error(upstream_error: Any) -> UpstreamStreamError:
    if isinstance(upstream_error, dict):
        return UpstreamStreamError(
            str(upstream_error.get("message") or "The upstream reported an error."),
            type=str(upstream_error.get("type") or "api_error"),
            code=str_or_none(upstream_error.get("code")),
        )
    return UpstreamStreamError(str(upstream_error))


def _records_nothing(text: str) -> None:
    """Text goes out as it came, with nothing to remember."""
