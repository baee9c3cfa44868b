"""The real `openai` SDK against a real proxy process relaying an OpenAI-format mock upstream:
tool calls, streams, the stream helper, usage, errors, and what happens in time (first chunk
early, client disconnect closes the upstream request)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import openai
import pytest

from tests.e2e.conftest import PROVIDER_KEY, RunningProxy, sdk_client
from tests.helpers.mock_upstream import OPENAI_PATH, Frame, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import (
    CALLS,
    TOOLS,
    USAGE,
    openai_text_chunks,
    openai_tool_chunks,
    openai_tool_completion,
)

pytestmark = pytest.mark.e2e

MESSAGES: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


def test_non_stream_tool_call(upstream: MockUpstream, client: openai.OpenAI) -> None:
    upstream.add(Reply(json=openai_tool_completion()))

    completion = client.chat.completions.create(model="mini", messages=MESSAGES, tools=TOOLS)

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert calls == CALLS
    assert completion.model == "mini"


def test_stream_of_parallel_tool_calls(upstream: MockUpstream, client: openai.OpenAI) -> None:
    upstream.add(Reply(frames=openai_frames(openai_tool_chunks())))

    calls: dict[int, list[str]] = {}
    finish_reasons = []
    stream = client.chat.completions.create(
        model="mini", messages=MESSAGES, tools=TOOLS, stream=True
    )
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or []:
            assert delta_call.function is not None
            if delta_call.id:
                calls[delta_call.index] = [delta_call.id, delta_call.function.name or "", ""]
            calls[delta_call.index][2] += delta_call.function.arguments or ""
        finish_reasons.append(chunk.choices[0].finish_reason)

    assert [tuple(calls[index]) for index in sorted(calls)] == CALLS
    assert [reason for reason in finish_reasons if reason] == ["tool_calls"]


def test_stream_helper_final_completion_equals_non_stream(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream.add(Reply(frames=openai_frames(openai_tool_chunks(include_usage=True))))
    upstream.add(Reply(json=openai_tool_completion()))
    tools: Any = TOOLS
    options: Any = {"include_usage": True}

    with client.chat.completions.stream(
        model="mini", messages=MESSAGES, tools=tools, stream_options=options
    ) as stream:
        for _event in stream:
            pass
        streamed = stream.get_final_completion()
    whole = client.chat.completions.create(model="mini", messages=MESSAGES, tools=tools)

    assert streamed.choices[0].finish_reason == whole.choices[0].finish_reason == "tool_calls"
    assert streamed.choices[0].message.content == whole.choices[0].message.content
    streamed_calls = streamed.choices[0].message.tool_calls or []
    unparsed = {"index": True, "function": {"parsed_arguments"}}
    assert [c.model_dump(exclude=unparsed) for c in streamed_calls] == [
        c.model_dump() for c in whole.choices[0].message.tool_calls or []
    ]
    assert streamed.usage == whole.usage


def test_include_usage_gives_a_final_usage_chunk(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream.add(Reply(frames=openai_frames(openai_tool_chunks(include_usage=True))))

    chunks = list(
        client.chat.completions.create(
            model="mini",
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.model_dump(exclude_none=True) == USAGE


def _drain(stream: Iterable[Any], received: list[Any]) -> None:
    for chunk in stream:
        received.append(chunk)


def test_mid_stream_upstream_error_raises_api_error_while_iterating(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream_error = {"message": "Overloaded, try later.", "type": "overloaded_error"}
    frames = openai_frames(openai_tool_chunks()[:3], done=False)
    # The pause lets the proxy commit to the stream first (an earlier error would be a 502).
    upstream.add(Reply(frames=[*frames, Frame({"error": upstream_error}, delay=0.3)]))

    received: list[Any] = []
    stream = client.chat.completions.create(
        model="mini", messages=MESSAGES, tools=TOOLS, stream=True
    )
    with pytest.raises(openai.APIError) as raised:
        _drain(stream, received)

    assert len(received) == 3
    assert raised.value.message == "Overloaded, try later."


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("keyless", openai.AuthenticationError),  # its api_key is an unset ${VAR}
        ("no-such-model", openai.NotFoundError),
    ],
)
def test_proxy_side_errors_reach_the_sdk_as_typed_errors(
    upstream: MockUpstream, client: openai.OpenAI, model: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        client.chat.completions.create(model=model, messages=MESSAGES)

    assert upstream.exchanges == []


def test_wrong_client_key_is_an_authentication_error(proxy: RunningProxy) -> None:
    with (
        sdk_client(proxy, api_key="wrong") as stranger,
        pytest.raises(openai.AuthenticationError),
    ):
        stranger.models.list()


def test_upstream_rate_limit_is_a_rate_limit_error_with_retry_after(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    body = {"error": {"message": "Slow down.", "type": "rate_limit_error"}}
    upstream.add(Reply(429, json=body, headers={"retry-after": "3"}))

    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="mini", messages=MESSAGES, stream=True)

    assert raised.value.response.headers["retry-after"] == "3"
    assert raised.value.body == {
        "message": "Slow down.",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }


def test_upstream_error_echoing_the_key_reaches_the_sdk_redacted(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    echo = f"Incorrect API key provided: {PROVIDER_KEY}."
    upstream.add(Reply(401, json={"error": {"message": echo, "type": "invalid_request_error"}}))

    # The upstream refused ToolRelay's own key: a 502 the SDK cannot take for its own key's.
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="mini", messages=MESSAGES)

    assert raised.value.code == "upstream_auth_failed"
    assert "Incorrect API key provided" in raised.value.message
    assert PROVIDER_KEY not in raised.value.message  # and not in the log: see run_proxy


def test_first_chunk_reaches_the_client_before_the_upstream_finishes(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    frames = openai_frames(openai_text_chunks("early", "late", "later"))
    frames[2] = Frame(frames[2].data, delay=1.0)  # the upstream pauses after "early"
    upstream.add(Reply(frames=frames))

    received_at = []
    for _chunk in client.chat.completions.create(model="mini", messages=MESSAGES, stream=True):
        received_at.append(time.monotonic())

    (exchange,) = upstream.requests(OPENAI_PATH)
    # Same process, same clock: the client held "early" before the upstream sent "late".
    assert received_at[1] < exchange.sent_at[2]
    assert exchange.sent_at[2] - received_at[1] > 0.5


@pytest.mark.parametrize(
    "reply",
    [
        Reply(frames=openai_frames(openai_text_chunks("a", "b")), hang_after=2),
        Reply(frames=[Frame(c, delay=0.2) for c in openai_text_chunks(*["tick"] * 60)]),
    ],
    ids=["upstream-silent", "upstream-trickling"],
)
def test_client_disconnect_closes_the_upstream_request(
    upstream: MockUpstream, client: openai.OpenAI, reply: Reply
) -> None:
    upstream.add(reply)

    with client.chat.completions.create(model="mini", messages=MESSAGES, stream=True) as stream:
        next(iter(stream))
    # Leaving the block closed the client's connection mid-stream.

    (exchange,) = upstream.requests(OPENAI_PATH)
    assert exchange.closed.wait(timeout=5), "the proxy kept the upstream request open"


THOUGHT = "Paris first, then Tokyo."


def reasoning_completion() -> dict[str, Any]:
    """An OpenAI-compatible reasoning answer (DeepSeek, vLLM's reasoning parsers): the
    thinking in `reasoning_content`, the count in `completion_tokens_details`."""
    completion = openai_tool_completion()
    completion["choices"][0]["message"]["reasoning_content"] = THOUGHT
    details = {"reasoning_tokens": 17}
    completion["usage"] = {**USAGE, "completion_tokens_details": details}
    return completion


def reasoning_chunks() -> list[dict[str, Any]]:
    chunks = openai_tool_chunks(include_usage=True)
    for half in (THOUGHT[9:], THOUGHT[:9]):
        chunks.insert(1, chunks[1] | {"choices": [_delta({"reasoning_content": half})]})
    chunks[-1]["usage"] = {**USAGE, "completion_tokens_details": {"reasoning_tokens": 17}}
    return chunks


def _delta(delta: dict[str, Any]) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_reasoning_effort_goes_as_sent_and_thinking_comes_back_as_reasoning_content(
    upstream: MockUpstream, client: openai.OpenAI, stream: bool
) -> None:
    reply = (
        Reply(frames=openai_frames(reasoning_chunks()))
        if stream
        else Reply(json=reasoning_completion())
    )
    upstream.add(reply)
    fields: Any = {"model": "mini", "messages": MESSAGES, "tools": TOOLS}
    fields["reasoning_effort"] = "high"
    if stream:
        with client.chat.completions.stream(
            **fields, stream_options={"include_usage": True}
        ) as events:
            completion = events.get_final_completion()
    else:
        completion = client.chat.completions.create(**fields)

    message = completion.choices[0].message
    assert (message.model_extra or {}).get("reasoning_content") == THOUGHT
    assert not message.content
    assert [call.id for call in message.tool_calls or []] == [call_id for call_id, _, _ in CALLS]
    assert completion.usage is not None
    assert completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 17
    assert upstream.requests(OPENAI_PATH)[-1].body["reasoning_effort"] == "high"
