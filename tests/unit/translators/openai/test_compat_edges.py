"""Repairs of OpenAI-compatible streams that no single server's transcript shows: what a choice
owes when it ends, several choices, chunks after the end, ids the proxy has to make."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import UpstreamProtocolError
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.base import Chunk, ResponseContext
from app.translators.openai.stream import OpenAIStream
from tests.helpers.openai_stream import assert_openai_stream, fold_stream

ENVELOPE = {"id": "u1", "object": "chat.completion.chunk", "created": 7, "model": "up"}


def context(include_usage: bool = False) -> ResponseContext:
    body = {
        "model": "fast",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": include_usage},
    }
    return ResponseContext("chatcmpl-p1", 1, "fast", parse_chat_request(orjson.dumps(body)))


def chunk(delta: dict[str, Any], finish_reason: str | None = None, index: int = 0) -> Chunk:
    choice = {"index": index, "delta": delta, "finish_reason": finish_reason}
    return {**ENVELOPE, "choices": [choice]}


def relay(upstream: list[Any], *, include_usage: bool = False) -> list[Chunk]:
    stream = OpenAIStream(context(include_usage))
    relayed: list[Chunk] = []
    for entry in upstream:
        data = entry if isinstance(entry, str) else orjson.dumps(entry).decode()
        relayed += stream.feed(SSEEvent(data))
    return relayed + stream.finish()


def deltas(relayed: list[Chunk]) -> list[tuple[dict[str, Any], Any]]:
    return [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in relayed]


HEADER = {"index": 0, "id": "c1", "type": "function", "function": {"name": "now", "arguments": ""}}


def test_a_call_whose_arguments_never_came_gets_an_empty_object() -> None:
    relayed = relay([chunk({"role": "assistant", "tool_calls": [HEADER]}), chunk({}, "stop")])

    assert deltas(relayed)[1:] == [
        ({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "tool_calls")
    ]
    assert_openai_stream(relayed, include_usage=False)


def test_done_without_a_finish_gets_one() -> None:
    relayed = relay([chunk({"role": "assistant", "content": "Hi"}), "[DONE]"])

    assert deltas(relayed) == [({"role": "assistant", "content": "Hi"}, None), ({}, "stop")]


def test_nothing_after_done_is_relayed() -> None:
    relayed = relay([chunk({"role": "assistant"}, "stop"), "[DONE]", chunk({"content": "late"})])

    assert deltas(relayed) == [({"role": "assistant"}, "stop")]


def test_a_second_finish_for_a_choice_is_dropped() -> None:
    upstream = [chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"), chunk({}, "stop")]

    assert deltas(relay(upstream)) == [({"role": "assistant", "content": "Hi"}, None), ({}, "stop")]


def test_a_call_without_id_gets_one_made_from_the_completion_id() -> None:
    whole = {"function": {"name": "now", "arguments": "{}"}}

    relayed = relay([chunk({"role": "assistant", "tool_calls": [whole]}, "tool_calls")])

    assert relayed[0]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_p1_0"
    assert_openai_stream(relayed, include_usage=False)


def test_each_choice_has_its_own_calls_and_finish() -> None:
    calls = [{"id": "c", "function": {"name": "now", "arguments": "{}"}}]
    calls.append({"function": {"name": "now", "arguments": "{}"}})
    upstream = [
        {
            **ENVELOPE,
            "choices": [chunk({"tool_calls": [calls[i]]}, index=i)["choices"][0] for i in (0, 1)],
        },
        {**ENVELOPE, "choices": [chunk({}, "stop", index=i)["choices"][0] for i in (0, 1)]},
    ]

    relayed = relay(upstream)

    by_choice: dict[int, list[tuple[dict[str, Any], Any]]] = {0: [], 1: []}
    for relayed_chunk in relayed:
        for choice in relayed_chunk["choices"]:
            by_choice[choice["index"]].append((choice["delta"], choice["finish_reason"]))
    for index, call_id in ((0, "c"), (1, "call_p1_1_0")):
        header = {"index": 0, "id": call_id, "type": "function"}
        header["function"] = {"name": "now", "arguments": ""}
        assert by_choice[index] == [
            ({"tool_calls": [header], "role": "assistant"}, None),
            ({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, None),
            ({}, "tool_calls"),
        ], "each choice counts its calls from 0; one sent without id gets one per choice"


def test_a_choice_without_index_is_choice_zero() -> None:
    relayed = relay(
        [{**ENVELOPE, "choices": [{"delta": {"content": "Hi"}, "finish_reason": "stop"}]}]
    )

    assert relayed[0]["choices"] == [
        {"delta": {"content": "Hi", "role": "assistant"}, "finish_reason": "stop", "index": 0}
    ]


def test_mistral_model_length_is_length() -> None:
    assert deltas(relay([chunk({"role": "assistant"}, "model_length")])) == [
        ({"role": "assistant"}, "length")
    ]


def test_reasoning_content_wins_over_reasoning_when_both_come() -> None:
    both = {"role": "assistant", "reasoning": "think", "reasoning_content": "think"}

    assert deltas(relay([chunk(both, "stop")])) == [
        ({"role": "assistant", "reasoning_content": "think"}, "stop")
    ]


def test_usage_without_total_gets_one() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    upstream = [chunk({"role": "assistant"}, "stop"), {**ENVELOPE, "choices": [], "usage": usage}]

    relayed = relay(upstream, include_usage=True)

    assert relayed[-1]["usage"] == {**usage, "total_tokens": 7}
    assert_openai_stream(relayed, include_usage=True)


def test_no_usage_chunk_is_invented_when_the_upstream_sent_none() -> None:
    relayed = relay([chunk({"role": "assistant"}, "stop"), "[DONE]"], include_usage=True)

    assert all(relayed_chunk["choices"] for relayed_chunk in relayed)


@pytest.mark.parametrize(
    "payload",
    [
        {**ENVELOPE, "choices": {"index": 0}},
        {**ENVELOPE, "choices": ["text"]},
    ],
)
def test_choices_of_the_wrong_shape_are_a_protocol_error(payload: Chunk) -> None:
    with pytest.raises(UpstreamProtocolError):
        relay([payload])


def named_fragment(arguments: str, index: Any = 0) -> dict[str, Any]:
    function = {"name": "f", "arguments": arguments}
    return {"index": index, "id": "c1", "type": "function", "function": function}


def test_id_and_name_repeated_on_every_fragment_keep_nested_objects() -> None:
    """Fragments that start like the arguments sent so far are no re-sent call when they come
    at the call's own index: `{"` here opens a nested object."""
    fragments = ["", '{"a": ', '{"', 'b": 1}}']
    upstream = [chunk({"tool_calls": [named_fragment(fragment)]}) for fragment in fragments]

    relayed = relay([*upstream, chunk({}, "tool_calls")])

    (call,) = fold_stream(relayed)["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "f", "arguments": '{"a": {"b": 1}}'}
    assert_openai_stream(relayed, include_usage=False)


def test_an_index_that_is_not_an_integer_counts_as_missing() -> None:
    upstream = [chunk({"tool_calls": [named_fragment("{}", index=[0])]}), chunk({}, "stop")]

    relayed = relay(upstream)

    assert relayed[0]["choices"][0]["delta"]["tool_calls"][0]["index"] == 0
    assert_openai_stream(relayed, include_usage=False)
