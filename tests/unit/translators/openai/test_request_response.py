"""The openai passthrough: the client's body forwarded with only `model` changed, answers and
chunks relayed with only `model` rewritten, errors kept."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import parse_config
from app.errors import UpstreamProtocolError, UpstreamStatusError, UpstreamStreamError
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.translators.base import ResponseContext, Target
from app.translators.openai.request import MAX_TOOL_CALL_ID, build_request
from app.translators.openai.response import parse_error, parse_response
from app.translators.openai.stream import OpenAIStream

PROVIDER = parse_config(
    {
        "providers": {
            "p": {
                "kind": "openai",
                "base_url": "http://up/v1",
                "api_key": "sk-1",
                "headers": {"x-extra": "1"},
            }
        }
    },
    "c",
    {},
).providers["p"]
TARGET = Target("fast", "p", PROVIDER, "gpt-upstream")
REQUEST = parse_chat_request(
    b'{"model":"fast","messages":[{"role":"user","content":"hi"}],"stream":true,'
    b'"logit_bias":{"1":2},"vendor_field":[1]}'
)
CTX = ResponseContext("chatcmpl-x", 1, "fast", REQUEST)
FUNCTION = {"name": "f", "arguments": ""}


def test_build_request_forwards_everything_but_the_model() -> None:
    upstream = build_request(REQUEST, TARGET)
    assert upstream.url == "http://up/v1/chat/completions"
    assert upstream.headers == {
        "content-type": "application/json",
        "x-extra": "1",
        "authorization": "Bearer sk-1",
    }
    assert orjson.loads(upstream.body) == {
        **REQUEST.wire,
        "model": "gpt-upstream",
        "stream_options": {"include_usage": True},
    }
    assert REQUEST.wire["model"] == "fast", "the client's body must not be mutated"
    assert upstream.stream


@pytest.mark.parametrize(
    ("client_options", "upstream_options"),
    [
        (None, {"include_usage": True}),
        ({"include_usage": False}, {"include_usage": True}),
        ({"include_usage": True}, {"include_usage": True}),
        ({"vendor": 1}, {"vendor": 1, "include_usage": True}),
    ],
)
def test_streams_always_ask_the_upstream_for_usage(
    client_options: dict[str, object] | None, upstream_options: dict[str, object]
) -> None:
    """Limits and metrics count every stream's tokens, so the upstream is always asked for
    usage; the client's other stream options are kept."""
    body: dict[str, object] = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}
    body["stream"] = True
    if client_options is not None:
        body["stream_options"] = client_options
    upstream = build_request(parse_chat_request(orjson.dumps(body)), TARGET)
    assert orjson.loads(upstream.body)["stream_options"] == upstream_options


def test_non_stream_requests_get_no_stream_options() -> None:
    body = b'{"model":"fast","messages":[{"role":"user","content":"hi"}]}'
    upstream = build_request(parse_chat_request(body), TARGET)
    assert "stream_options" not in orjson.loads(upstream.body)


def test_tool_call_ids_too_long_for_openai_are_shortened_consistently() -> None:
    """A Gemini call id of ours (carrying a thought signature) in a history sent to OpenAI: it
    refuses ids over 40 characters, so call and result get one short id, the same on both."""
    long_id = "call_0_1a2b3c4d5e__sig_b" + "EtoCCtcCAdHtim9-c2lnbmF0dXJl" * 4
    short_id = "call_ok"
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**call, "id": long_id}, {**call, "id": short_id}],
        },
        {"role": "tool", "tool_call_id": long_id, "content": "1"},
        {"role": "tool", "tool_call_id": short_id, "content": "2"},
    ]
    request = parse_chat_request(orjson.dumps({"model": "fast", "messages": history}))

    sent = orjson.loads(build_request(request, TARGET).body)["messages"]

    new_id = sent[1]["tool_calls"][0]["id"]
    assert len(new_id) <= MAX_TOOL_CALL_ID
    assert new_id != long_id
    assert sent[2]["tool_call_id"] == new_id
    assert sent[1]["tool_calls"][1]["id"] == sent[3]["tool_call_id"] == short_id
    assert sent[0] == history[0]
    assert request.wire["messages"][1]["tool_calls"][0]["id"] == long_id, "client body mutated"


def test_short_tool_call_ids_are_sent_as_they_came() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "x" * 40, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "x" * 40, "content": "1"},
    ]
    request = parse_chat_request(orjson.dumps({"model": "fast", "messages": history}))
    sent = orjson.loads(build_request(request, TARGET).body)["messages"]
    assert sent == request.wire["messages"]


def test_no_authorization_header_without_a_key() -> None:
    keyless = Target("m", "p", PROVIDER.model_copy(update={"api_key": None}), "x")
    assert "authorization" not in build_request(REQUEST, keyless).headers


def test_stream_relays_strict_chunks_with_only_model_rewritten() -> None:
    stream = OpenAIStream(CTX)
    envelope = {
        "id": "u1",
        "object": "chat.completion.chunk",
        "created": 5,
        "model": "gpt-upstream",
    }
    deltas = [
        {"role": "assistant", "content": None},
        {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": FUNCTION}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '":1}'}}]},
    ]
    for delta in deltas:
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        upstream_chunk = {**envelope, "system_fingerprint": "fp", "choices": [choice]}
        (relayed,) = stream.feed(SSEEvent(orjson.dumps(upstream_chunk).decode()))
        assert orjson.dumps(relayed) == orjson.dumps({**upstream_chunk, "model": "fast"})
    assert stream.feed(SSEEvent("[DONE]")) == [
        {
            **envelope,
            "model": "fast",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        }
    ], "a stream that ends without a finish_reason gets one"
    assert stream.finish() == []


def test_stream_without_done_but_finished_is_complete() -> None:
    stream = OpenAIStream(CTX)
    stream.feed(SSEEvent('{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'))
    assert stream.finish() == []


def test_stream_cut_short_is_a_protocol_error() -> None:
    stream = OpenAIStream(CTX)
    stream.feed(SSEEvent('{"choices":[{"index":0,"delta":{"content":"a"}}]}'))
    with pytest.raises(UpstreamProtocolError):
        stream.finish()


def test_in_band_error_raises_a_stream_error() -> None:
    stream = OpenAIStream(CTX)
    with pytest.raises(UpstreamStreamError) as caught:
        stream.feed(SSEEvent('{"error":{"message":"overloaded","type":"server_error"}}'))
    assert (caught.value.message, caught.value.type) == ("overloaded", "server_error")


@pytest.mark.parametrize("payload", ["not json", "[1]", '"x"'])
def test_malformed_chunk_is_a_protocol_error(payload: str) -> None:
    with pytest.raises(UpstreamProtocolError):
        OpenAIStream(CTX).feed(SSEEvent(payload))


def test_parse_response_rewrites_model_only() -> None:
    upstream = {"id": "u", "object": "chat.completion", "model": "gpt-upstream", "choices": []}
    assert parse_response(orjson.dumps(upstream), CTX) == {**upstream, "model": "fast"}


def answer_with(message: dict[str, Any], finish_reason: str = "tool_calls") -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return orjson.dumps({"id": "u", "object": "chat.completion", "choices": [choice]})


def test_parse_response_keeps_one_of_a_call_sent_twice() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call, call]}

    answer = parse_response(answer_with(message), CTX)

    assert answer["choices"][0]["message"]["tool_calls"] == [call]


def test_parse_response_leaves_null_tool_calls_alone() -> None:
    message = {"role": "assistant", "content": "Hi", "tool_calls": None}

    answer = parse_response(answer_with(message, "stop"), CTX)

    # `refusal` and `logprobs` are added: OpenAI's spec requires them (nullable).
    assert answer["choices"][0] == {
        "index": 0,
        "message": {**message, "refusal": None},
        "finish_reason": "stop",
        "logprobs": None,
    }


def test_parse_response_rejects_a_body_without_choices() -> None:
    with pytest.raises(UpstreamProtocolError):
        parse_response(b'{"id":"x"}', CTX)


@pytest.mark.parametrize(
    ("status", "upstream_body", "headers", "expected"),
    [
        (
            429,
            b'{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit"}}',
            {"retry-after": "7", "x-other": "no"},
            (429, "slow down", "rate_limit_error", "rate_limit", {"retry-after": "7"}),
        ),
        (
            400,
            b'{"error":{"message":"bad","type":"invalid_request_error","param":"messages"}}',
            {},
            (400, "bad", "invalid_request_error", None, {}),
        ),
        (
            503,
            b"<html>gateway</html>",
            {},
            (502, "Upstream returned HTTP 503.", "api_error", None, {}),
        ),
        (
            404,
            b'{"error":"no such model"}',
            {},
            (404, "no such model", "not_found_error", None, {}),
        ),
    ],
)
def test_parse_error_keeps_the_upstream_message(
    status: int, upstream_body: bytes, headers: dict[str, str], expected: tuple[object, ...]
) -> None:
    error = parse_error(status, upstream_body, headers)
    assert isinstance(error, UpstreamStatusError)
    assert (error.status, error.message, error.type, error.code, error.headers) == expected
