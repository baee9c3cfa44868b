"""AuditedStream around a kind's stream translator: recovered calls as proper deltas whatever
the chunking, the same answer as the non-stream path, calls held until validated when the
policy needs it, structured calls renumbered after recovered ones."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ToolCallsConfig
from app.errors import InvalidToolCall
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.completion import audit_completion
from app.toolcalls.plan import ToolPlan, plan_for
from app.toolcalls.stream import AuditedStream
from app.toolcalls.validation import Validators
from app.translators.base import Chunk
from app.translators.chunks import ChunkBuilder
from tests.helpers.openai_stream import assert_openai_stream, fold_stream

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
PROSE = "Let me check."
CALL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
BUILD = ChunkBuilder("chatcmpl-1", 1700000000, "m")


class Replay:
    """The inner stream translator: each event's data is one chunk, as a kind would make."""

    def feed(self, event: SSEEvent) -> list[Chunk]:
        return [orjson.loads(event.data)]

    def usage(self) -> None:
        return None

    def finish(self) -> list[Chunk]:
        return []


def plan(**settings: Any) -> ToolPlan:
    request = parse_chat_request(
        orjson.dumps(
            {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        )
    )
    made = plan_for(request, ToolCallsConfig(**settings))
    assert made is not None
    return made


def run(chunks: list[Chunk], tool_plan: ToolPlan) -> tuple[list[Chunk], ToolCallAudit]:
    stream = AuditedStream(Replay(), tool_plan, Validators())
    out = [c for chunk in chunks for c in stream.feed(SSEEvent(orjson.dumps(chunk).decode()))]
    return out + stream.finish(), stream.audit


def text_stream(*pieces: str, finish: Any = "stop") -> list[Chunk]:
    return [BUILD.role(), *(BUILD.content(piece) for piece in pieces), BUILD.finish(finish)]


def splits(text: str) -> list[list[str]]:
    return [[text[:cut], text[cut:]] for cut in range(1, len(text))] + [list(text)]


@pytest.mark.parametrize("pieces", splits(PROSE + " " + CALL_TEXT))
def test_a_text_call_becomes_one_tool_call_at_every_split(pieces: list[str]) -> None:
    out, audit = run(text_stream(*pieces), plan(recover="auto"))
    assert_openai_stream(out, include_usage=False)
    message = fold_stream(out)["choices"][0]
    assert message["message"]["content"] == PROSE + " "  # sent before the marker could show
    (call,) = message["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert call["id"].startswith("call_")
    assert len(call["id"]) == 29
    assert message["finish_reason"] == "tool_calls"
    assert [(c.source, c.verdict.result) for c in audit.calls] == [("recovered", "ok")]


def test_the_stream_folds_to_the_non_stream_answer() -> None:
    out, _ = run(text_stream(PROSE, " ", CALL_TEXT), plan(recover="hermes"))
    completion = whole_answer(PROSE + " " + CALL_TEXT)
    audit_completion(completion, plan(recover="hermes"), Validators())
    streamed, whole = fold_stream(out)["choices"][0], completion["choices"][0]
    assert streamed["message"]["content"] == whole["message"]["content"]
    assert streamed["finish_reason"] == whole["finish_reason"]
    assert [c["function"] for c in streamed["message"]["tool_calls"]] == [
        c["function"] for c in whole["message"]["tool_calls"]
    ]


def whole_answer(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def test_plain_text_chunks_go_out_as_the_same_objects() -> None:
    stream = AuditedStream(Replay(), plan(recover="auto"), Validators())
    chunk = BUILD.content("Paris is sunny today.")
    (out,) = stream.feed(SSEEvent(orjson.dumps(chunk).decode()))
    assert out == chunk


def test_an_unclosed_call_at_the_end_is_text_with_the_upstreams_finish_reason() -> None:
    out, audit = run(
        text_stream(PROSE, ' <tool_call>{"name": "get_w', finish="length"), plan(recover="auto")
    )
    message = fold_stream(out)["choices"][0]
    assert message["message"]["content"] == PROSE + ' <tool_call>{"name": "get_w'
    assert "tool_calls" not in message["message"]
    assert message["finish_reason"] == "length"
    assert audit.calls == []


def structured(arguments: str, *, index: int = 0) -> list[Chunk]:
    return [
        BUILD.role(),
        BUILD.tool_call_start(index, "call_up", "get_weather"),
        BUILD.tool_call_arguments(index, arguments[:5]),
        BUILD.tool_call_arguments(index, arguments[5:]),
        BUILD.finish("tool_calls"),
    ]


def test_pass_relays_a_bad_call_unchanged_and_counts_it() -> None:
    chunks = structured('{"town": "Paris"}')
    out, audit = run(chunks, plan(on_invalid="pass"))
    assert out == chunks
    (call,) = audit.calls
    assert call.verdict.result == "schema_mismatch"
    assert [v.kind for v in call.verdict.violations] == ["missing_required"]


def test_holding_keeps_everything_back_until_the_calls_are_valid() -> None:
    chunks = structured('{"city": "Paris"}')
    stream = AuditedStream(Replay(), plan(on_invalid="error"), Validators())
    held = [stream.feed(SSEEvent(orjson.dumps(chunk).decode())) for chunk in chunks[:-1]]
    assert held == [[], [], [], []]  # nothing would commit the client's stream yet
    assert stream.feed(SSEEvent(orjson.dumps(chunks[-1]).decode())) == chunks


@pytest.mark.parametrize("policy", ["error", "retry"])
def test_holding_refuses_a_bad_call_before_anything_was_sent(policy: str) -> None:
    stream = AuditedStream(Replay(), plan(on_invalid=policy), Validators())
    chunks = structured('{"town": "Paris"}')
    for chunk in chunks[:-1]:
        assert stream.feed(SSEEvent(orjson.dumps(chunk).decode())) == []
    with pytest.raises(InvalidToolCall) as caught:
        stream.feed(SSEEvent(orjson.dumps(chunks[-1]).decode()))
    assert caught.value.status == 502
    assert caught.value.code == "invalid_tool_call"
    assert '"city" is a required property' in caught.value.message
    assert caught.value.message.startswith("get_weather: ")


def test_holding_lets_text_through_and_keeps_only_the_calls() -> None:
    chunks = [BUILD.role(), BUILD.content("Checking."), *structured('{"city": "Oslo"}')[1:]]
    stream = AuditedStream(Replay(), plan(on_invalid="error"), Validators())
    outs = [stream.feed(SSEEvent(orjson.dumps(chunk).decode())) for chunk in chunks]
    assert outs[0] == []
    assert outs[1] == chunks[:2]  # the role chunk goes out in front of the first text
    assert outs[2:5] == [[], [], []]
    assert outs[5] == chunks[2:]


def test_structured_calls_after_a_recovered_one_are_renumbered() -> None:
    chunks = [
        BUILD.role(),
        BUILD.content(CALL_TEXT),
        BUILD.tool_call_start(0, "call_up", "get_weather"),
        BUILD.tool_call_arguments(0, '{"city": "Rome"}'),
        BUILD.finish("stop"),
    ]
    out, audit = run(chunks, plan(recover="hermes"))
    assert_openai_stream(out, include_usage=False)
    calls = fold_stream(out)["choices"][0]["message"]["tool_calls"]
    assert [call["function"]["arguments"] for call in calls] == [
        '{"city": "Paris"}',
        '{"city": "Rome"}',
    ]
    assert [c.source for c in audit.calls] == ["recovered", "structured"]


def test_the_usage_chunk_stays_last() -> None:
    chunks = [
        *text_stream(CALL_TEXT)[:-1],
        BUILD.usage({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
    ]
    out, _ = run(chunks, plan(recover="hermes"))
    assert out[-1]["choices"] == []
    assert out[-2]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]


def text_then_bad_call() -> list[Chunk]:
    return [BUILD.role(), BUILD.content("Checking."), *structured('{"town": "Paris"}')[1:]]


def test_fallback_relays_a_bad_call_as_pass_does_once_the_stream_is_committed() -> None:
    """Text reached the client: no other deployment may answer now (issue 29)."""
    chunks = text_then_bad_call()
    audits: list[ToolCallAudit] = []
    stream = AuditedStream(Replay(), plan(on_invalid="fallback"), Validators(), audits.append)
    out = stream.feed(SSEEvent(orjson.dumps(chunks[0]).decode()))
    out += stream.feed(SSEEvent(orjson.dumps(chunks[1]).decode()))
    stream.committed()  # the relay sent the text
    for chunk in chunks[2:]:
        out += stream.feed(SSEEvent(orjson.dumps(chunk).decode()))
    assert out == run(chunks, plan(on_invalid="pass"))[0] == chunks
    assert [[c.verdict.result for c in audit.calls] for audit in audits] == [["schema_mismatch"]]


def test_fallback_still_refuses_while_the_text_has_not_gone_out() -> None:
    """Text and the bad call in the stream's first read: nothing reached the client yet."""
    with pytest.raises(InvalidToolCall):
        run(text_then_bad_call(), plan(on_invalid="fallback"))


@pytest.mark.parametrize("policy", ["error", "retry"])
def test_error_and_retry_refuse_a_bad_call_even_once_committed(policy: str) -> None:
    chunks = text_then_bad_call()
    stream = AuditedStream(Replay(), plan(on_invalid=policy), Validators())
    for chunk in chunks[:2]:
        stream.feed(SSEEvent(orjson.dumps(chunk).decode()))
    stream.committed()
    for chunk in chunks[2:-1]:
        assert stream.feed(SSEEvent(orjson.dumps(chunk).decode())) == []  # the call is held
    with pytest.raises(InvalidToolCall):
        stream.feed(SSEEvent(orjson.dumps(chunks[-1]).decode()))
