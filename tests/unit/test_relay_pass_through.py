"""The openai-kind stream's fast path (app/relay/pass_through.py) changes nothing a client or
the audit sees: every openai_compat transcript, and streams with text, parallel calls, usage
and recovery, relayed with whole events per read (the fast path's case) give the same chunks,
audit and usage as the same bytes cut mid-event (always decoded and translated).

That the fast path was taken is shown by the bytes: the upstream writes spaced JSON, which a
relayed event keeps and a translated one does not."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.config import ToolCallsConfig
from app.errors import ProxyError
from app.openai_types import parse_chat_request
from app.relay.streaming import StreamOptions, StreamOutcome, open_stream
from app.relay.upstream import LocalAnswer
from app.relay.upstream_types import ReadLimits
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.plan import plan_for
from app.toolcalls.stream import AuditedStream
from app.toolcalls.validation import Validators
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext, StreamTranslator, UpstreamRequest

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "openai_compat"
STREAMS = [
    case
    for case in sorted(TRANSCRIPTS.glob("*.json"))
    if isinstance(orjson.loads(case.read_bytes())["upstream"], list)
]
SPACED = b'"object": "chat.completion.chunk"'
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Client:
    """An upstream whose answer arrives in the given reads."""

    def __init__(self, reads: list[bytes]) -> None:
        self._reads = reads

    async def open(self, request: UpstreamRequest, limits: ReadLimits) -> LocalAnswer:
        return LocalAnswer(200, {}, self._reads)

    async def aclose(self) -> None:
        pass


def spaced(entry: Any) -> str:
    """How Python's json module (and so many a compatible server) writes an event."""
    return entry if isinstance(entry, str) else json.dumps(entry)


def events_of(upstream: list[Any]) -> list[bytes]:
    return [f"data: {spaced(entry)}\n\n".encode() for entry in upstream]


async def relay(
    reads: list[bytes], *, tools: bool, recover: str = "off", on_invalid: str = "pass"
) -> tuple[list[Any], bytes, list[ToolCallAudit], StreamOutcome]:
    """The client's chunks (then its error event, if any), its bytes, the audits recorded and
    how the stream ended, for an upstream read in `reads`."""
    body: dict[str, Any] = {
        "model": "fast",
        "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = [WEATHER]
    request = parse_chat_request(orjson.dumps(body))
    ctx = ResponseContext("chatcmpl-test", 1700000000, "fast", request)
    audits: list[ToolCallAudit] = []
    outcomes: list[StreamOutcome] = []
    settings = ToolCallsConfig.model_validate({"recover": recover, "on_invalid": on_invalid})
    plan = plan_for(request, settings)

    def wrap(stream: StreamTranslator) -> StreamTranslator:
        if plan is None:
            return stream
        return AuditedStream(stream, plan=plan, validators=Validators(), on_audit=audits.append)

    options = StreamOptions("oa", str, on_end=outcomes.append)
    upstream_request = UpstreamRequest("http://upstream.test/v1/chat/completions", {}, b"", True)
    sent = b""
    try:
        frames = await open_stream(
            Client(reads), upstream_request, TRANSLATORS["openai"], ctx, options, wrap
        )
        async for frame in frames:
            sent += frame
    except ProxyError as error:
        return [error.body()], sent, audits, StreamOutcome(error)
    view = [
        orjson.loads(line[6:])
        for line in sent.split(b"\n\n")
        if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]
    return view, sent, audits, outcomes[0]


def cut_mid_event(events: list[bytes]) -> list[bytes]:
    """The same bytes, every read ending one byte into the next event: never a whole event."""
    body = b"".join(events)
    cuts, at = [], 0
    for event in events[:-1]:
        at += len(event)
        cuts.append(at + 1)
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def assert_same(fast: Any, slow: Any) -> None:
    fast_view, _, fast_audits, fast_end = fast
    slow_view, _, slow_audits, slow_end = slow
    assert fast_view == slow_view
    assert [audit.counts() for audit in fast_audits] == [a.counts() for a in slow_audits]
    assert fast_end.usage == slow_end.usage
    assert (fast_end.error is None) == (slow_end.error is None)


@pytest.mark.parametrize("tools", [False, True], ids=["no-tools", "tools"])
@pytest.mark.parametrize("case", STREAMS, ids=lambda case: case.stem)
async def test_every_transcript_relays_the_same_on_both_paths(case: Path, tools: bool) -> None:
    events = events_of(orjson.loads(case.read_bytes())["upstream"])
    whole = await relay(events, tools=tools)
    assert_same(whole, await relay(cut_mid_event(events), tools=tools))
    grouped = [b"".join(events[i : i + 3]) for i in range(0, len(events), 3)]
    assert_same(await relay(grouped, tools=tools), whole)


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "upstream-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


def call_stream(fragments: int, calls: int = 2, arguments: str = '"Paris"') -> list[Any]:
    upstream: list[Any] = [chunk({"role": "assistant", "content": ""})]
    upstream += [chunk({"content": part}) for part in ("Checking ", "both.")]
    for index in range(calls):
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        head["function"] = {"name": "get_weather", "arguments": ""}
        upstream.append(chunk({"tool_calls": [head]}))
        pieces = ['{"city": ', arguments, "}", *[" "] * fragments]
        for piece in pieces:
            fragment = {"index": index, "function": {"arguments": piece}}
            upstream.append(chunk({"tool_calls": [fragment]}))
    upstream.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
    upstream.append({**chunk({}), "choices": [], "usage": usage})
    return [*upstream, "[DONE]"]


@pytest.mark.parametrize("on_invalid", ["pass", "error"])
@pytest.mark.parametrize("recover", ["off", "auto"])
@pytest.mark.parametrize("arguments", ['"Paris"', "42"], ids=["valid", "invalid"])
async def test_calls_text_and_usage_are_audited_alike(
    recover: str, on_invalid: str, arguments: str
) -> None:
    events = events_of(call_stream(fragments=20, arguments=arguments))
    settings = {"recover": recover, "on_invalid": on_invalid}
    fast = await relay(events, tools=True, **settings)
    assert_same(fast, await relay(cut_mid_event(events), tools=True, **settings))
    view, sent, audits, _ = fast
    if view and "error" in view[-1]:
        assert on_invalid == "error"
        assert arguments == "42"
        return
    (audit,) = audits
    assert audit.counts() == {"ok" if arguments == '"Paris"' else "schema_mismatch": 2}
    assert all(chunk["model"] == "fast" for chunk in view)
    # Relayed as written only when nothing between upstream and client rewrites calls.
    assert (SPACED in sent) == (recover == "off" and on_invalid == "pass")


async def test_a_relayed_event_keeps_its_bytes_but_the_model() -> None:
    events = events_of(call_stream(fragments=3))
    _, sent, _, _ = await relay(events, tools=True)
    fragment = b'{"index": 0, "function": {"arguments": " "}}'
    assert fragment in sent  # as the upstream wrote it
    assert b'"model": "upstream-model"' not in sent
    assert b'"model":"fast"' in sent


async def test_a_model_key_elsewhere_in_the_event_is_left_alone() -> None:
    upstream = call_stream(fragments=2)
    upstream[2] = {**upstream[2], "meta": {"model": "upstream-model"}}
    events = events_of(upstream)
    view, _, _, _ = await relay(events, tools=True)
    assert view[2]["model"] == "fast"
    assert view[2]["meta"] == {"model": "upstream-model"}
    assert_same(await relay(events, tools=True), await relay(cut_mid_event(events), tools=True))


def compact(upstream: list[Any]) -> list[bytes]:
    return [written(entry, "compact") for entry in upstream]


async def test_an_event_framed_like_the_last_but_holding_two_fragments_is_decoded() -> None:
    """Its bytes before the first fragment and after the last are the last event's, but what
    lies between is not one JSON string: it must not pass as one fragment of one call."""
    upstream: list[Any] = [chunk({"role": "assistant", "content": ""})]
    for index in (0, 1):
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        upstream.append(chunk({"tool_calls": [{**head, "function": {"name": "get_weather"}}]}))
    upstream.append(
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"city": "Par'}}]})
    )
    both = [{"index": 1, "function": {"arguments": 'is"}'}}]
    both.append({"index": 0, "function": {"arguments": '{"city": "Tokyo"}'}})
    upstream += [chunk({"tool_calls": both}), chunk({}, "tool_calls"), "[DONE]"]
    finish_at = len(upstream) - 2
    events = compact(upstream)
    assert events[finish_at - 1].endswith(b'"}}]},"logprobs":null,"finish_reason":null}]}\n\n')
    fast = await relay(events, tools=True)
    assert_same(fast, await relay(cut_mid_event(events), tools=True))
    (audit,) = fast[2]
    assert audit.counts() == {"ok": 2}


@pytest.mark.parametrize("finish_read", ["whole", "in two reads"])
async def test_a_fragment_like_the_last_after_the_finish_is_not_relayed(finish_read: str) -> None:
    """Bytes that match the last fragment's template after another event changed what may
    pass (here a finish) are checked again, however that event was read."""
    upstream = call_stream(fragments=3, calls=1)
    straggler = upstream[-4]  # the call's last fragment
    upstream.insert(-2, straggler)  # after the finish, before the usage
    events = compact(upstream)
    finish = events.index(compact([chunk({}, "tool_calls")])[0])
    reads = events[:finish]
    if finish_read == "whole":
        reads.append(events[finish])
    else:
        reads += [events[finish][:20], events[finish][20:]]
    reads += events[finish + 1 :]
    fast = await relay(reads, tools=True)
    assert_same(fast, await relay(cut_mid_event(events), tools=True))
    view = fast[0]
    finished = next(
        i for i, c in enumerate(view) if c["choices"] and c["choices"][0]["finish_reason"]
    )
    assert not any(c["choices"] and c["choices"][0]["delta"] for c in view[finished + 1 :])


async def test_a_read_that_ends_an_event_begun_in_the_last_is_decoded_with_it() -> None:
    """One event of two data lines, read line by line: the second read looks like a whole
    event of its own, but it is the end of one the decoder holds the start of."""
    events = compact(call_stream(fragments=2))
    first, second = events[1][:-2] + b"\n", events[2]  # `data: A\n` then `data: B\n\n`
    reads = [events[0], first, second, *events[3:]]
    fast = await relay(reads, tools=True)
    joined = [events[0], first + second, *events[3:]]
    assert_same(fast, await relay(cut_mid_event(joined), tools=True))
    assert "error" in fast[0][-1]  # two JSON objects in one event's data: the upstream's fault


async def test_a_model_written_after_the_text_is_rewritten() -> None:
    upstream = [chunk({"role": "assistant", "content": ""})]
    for text in ("Checking ", "the ", "weather."):
        late = chunk({"content": text})
        del late["model"]
        upstream.append({**late, "model": "upstream-model"})
    upstream += [chunk({}, "stop"), "[DONE]"]
    events = compact(upstream)
    view, sent, _, _ = await relay(events, tools=False)
    assert b'"content":"the "},"logprobs":null,"finish_reason":null}],"model":"fast"}' in sent
    assert all(client_chunk["model"] == "fast" for client_chunk in view)
    assert_same(await relay(events, tools=False), await relay(cut_mid_event(events), tools=False))


async def test_random_splits_give_the_same_client_view() -> None:
    events = events_of(call_stream(fragments=10))
    body = b"".join(events)
    whole = await relay(events, tools=True)
    rng = random.Random(23)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(body)), k=12))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert_same(await relay(pieces, tools=True), whole)


# --- fuzz: any stream, written any way, read in any pieces ------------------------------------

FRAGMENTS = st.sampled_from(
    ['{"city": ', '"Par', 'is"', "}", " ", "", "\\u00e9", "\u2028", "\\", 'a"}', "\n", "\x01"]
)


def _event(draw: st.DrawFn, started: list[int], model: str) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["text", "start", "fragment", "role", "reasoning", "odd", "obfuscated", "late_model"]
        )
    )
    if kind == "start" and len(started) < 3:
        index = draw(st.sampled_from([len(started), len(started) + 1]))
        started.append(index)
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        head["function"] = {"name": "get_weather", "arguments": draw(FRAGMENTS)}
        return chunk({"tool_calls": [head]})
    if kind == "fragment" and started:
        arguments = {"arguments": draw(FRAGMENTS)}
        return chunk(
            {"tool_calls": [{"index": draw(st.sampled_from(started)), "function": arguments}]}
        )
    if kind == "role":
        return chunk({"role": "assistant", "content": draw(st.text(max_size=3))})
    if kind == "reasoning":
        return chunk({"reasoning": draw(st.text(max_size=3))})
    if kind == "odd":  # a null usage, and `model` once more, as a key of another object
        return chunk({"content": "x"}, usage=None, extra={"model": model})
    return _text_event(draw, kind)


def _text_event(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    text = chunk({"content": draw(st.text(max_size=6))})
    if kind not in ("obfuscated", "late_model"):
        return text
    if kind == "obfuscated":  # OpenAI pads events with a field that differs in each one
        return {**text, "obfuscation": draw(st.text(max_size=4))}
    model = text.pop("model")  # written after the text (the stream sets its value)
    return {**text, "model": model}


@st.composite
def upstream_streams(draw: st.DrawFn) -> list[Any]:
    """Text, calls (in order, with a gap, announced late), repeated roles, reasoning, usage on
    every chunk or only at the end, a finish without [DONE], an event after the finish: what
    compatible servers send."""
    model = draw(st.sampled_from(["upstream-model", "fast", "m\u00e9", 'q"uote']))
    started: list[int] = []
    upstream: list[Any] = [chunk({"role": "assistant", "content": ""})]
    upstream += [_event(draw, started, model) for _ in range(draw(st.integers(0, 14)))]
    every_chunk = draw(st.booleans())
    for entry in upstream:
        entry["model"] = model
        if every_chunk:
            entry["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    upstream.append(chunk({}, draw(st.sampled_from(["tool_calls", "stop", None]))))
    if len(upstream) > 2 and draw(st.booleans()):  # a straggler: the last event once more
        upstream.append(json.loads(json.dumps(upstream[-2])))
    return upstream + (["[DONE]"] if draw(st.booleans()) else [])


def written(entry: Any, style: str) -> bytes:
    if isinstance(entry, str):
        return f"data: {entry}\n\n".encode()
    if style == "compact":
        return b"data: " + orjson.dumps(entry) + b"\n\n"
    return f"data: {json.dumps(entry, ensure_ascii=style == 'ascii')}\n\n".encode()


@settings(max_examples=150, deadline=None)
@given(
    upstream=upstream_streams(),
    style=st.sampled_from(["compact", "spaced", "ascii"]),
    recover=st.sampled_from(["off", "auto"]),
    group=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_fuzz_fast_and_translated_paths_agree(
    upstream: list[Any], style: str, recover: str, group: int, seed: int
) -> None:
    events = [written(entry, style) for entry in upstream]
    grouped = [b"".join(events[i : i + group]) for i in range(0, len(events), group)]
    body = b"".join(events)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(body)), k=min(8, len(body) - 1)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    async def both() -> None:
        fast = await relay(grouped, tools=True, recover=recover)
        assert_same(fast, await relay(cut_mid_event(events), tools=True, recover=recover))
        assert_same(fast, await relay(pieces, tools=True, recover=recover))
        view = fast[0]
        if view and "error" not in view[-1]:
            assert all(client_chunk["model"] == "fast" for client_chunk in view)

    asyncio.run(both())
