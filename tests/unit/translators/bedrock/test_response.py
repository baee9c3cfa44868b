"""Converse answers and error answers -> OpenAI: text, calls, reasoning, every stopReason,
usage with cache reads and writes, every error type (botocore's Converse errors)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import UpstreamProtocolError, UpstreamStatusError
from app.translators.base import Target
from app.translators.bedrock.errors import parse_error
from app.translators.bedrock.names import tool_names
from app.translators.bedrock.response import parse_response
from app.translators.bedrock.translator import TRANSLATOR
from tests.helpers.openai_stream import assert_openai_completion
from tests.unit.translators.bedrock.converse import (
    CACHED_USAGE,
    answer,
    context,
    reasoning,
    redacted,
    text,
    tool_use,
)
from tests.unit.translators.bedrock.shapes import service_model

CALL = tool_use("tooluse_1", "get_weather", {"city": "Paris"})
CALL_2 = tool_use("tooluse_2", "get_weather", {"city": "Oslo"})


def message(completion: dict[str, Any]) -> dict[str, Any]:
    assert_openai_completion(completion)
    first: dict[str, Any] = completion["choices"][0]["message"]
    return first


def test_text_answer() -> None:
    completion = parse_response(answer([text("Hello"), text(" there")]), context())
    assert completion == {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "claude",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello there", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 7,
            "total_tokens": 19,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def test_one_call() -> None:
    completion = parse_response(answer([CALL], "tool_use"), context())
    assert message(completion)["tool_calls"] == [
        {
            "id": "tooluse_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        }
    ]
    assert message(completion)["content"] is None
    assert completion["choices"][0]["finish_reason"] == "tool_calls"


def test_parallel_calls_with_text_and_an_empty_input() -> None:
    bare = tool_use("tooluse_3", "now", {})
    completion = parse_response(
        answer([text("Checking."), CALL, CALL_2, bare], "tool_use"), context()
    )
    calls = message(completion)["tool_calls"]
    assert [call["id"] for call in calls] == ["tooluse_1", "tooluse_2", "tooluse_3"]
    assert calls[2]["function"]["arguments"] == "{}"
    assert message(completion)["content"] == "Checking."


def test_reasoning_as_reasoning_content_and_thinking_blocks() -> None:
    content = [reasoning("Think ", "sig1"), redacted("EmwKAhgB"), text("42")]
    msg = message(parse_response(answer(content), context()))
    assert msg["reasoning_content"] == "Think "
    assert msg["thinking_blocks"] == [
        {"type": "thinking", "thinking": "Think ", "signature": "sig1"},
        {"type": "redacted_thinking", "data": "EmwKAhgB"},
    ]


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("tool_use", "stop"),  # no call came with it
    ],
)
def test_every_stop_reason(stop_reason: str, expected: str) -> None:
    completion = parse_response(answer([text("x")], stop_reason), context())
    assert completion["choices"][0]["finish_reason"] == expected


def test_the_stop_reasons_tested_are_botocores() -> None:
    enum = service_model().shape_for("StopReason").enum
    assert set(enum) == {
        "end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened",
        "content_filtered", "malformed_model_output", "malformed_tool_use",
        "model_context_window_exceeded",
    }  # fmt: skip


@pytest.mark.parametrize("stop_reason", ["malformed_model_output", "malformed_tool_use"])
def test_malformed_output_is_an_upstream_error(stop_reason: str) -> None:
    with pytest.raises(UpstreamProtocolError, match=stop_reason):
        parse_response(answer([text("x")], stop_reason), context())


def test_usage_counts_cache_reads_and_writes_in_the_prompt() -> None:
    usage = parse_response(answer([text("x")], usage=CACHED_USAGE), context())["usage"]
    assert usage == {
        "prompt_tokens": 142,
        "completion_tokens": 7,
        "total_tokens": 149,
        "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 30},
    }


def test_mapped_tool_names_come_back_as_the_clients() -> None:
    function = {"name": "functions.lookup", "arguments": "{}"}
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    ctx = context(messages=history)
    sent_name = tool_names(ctx.request).bedrock("functions.lookup")
    completion = parse_response(answer([tool_use("t1", sent_name, {})], "tool_use"), ctx)
    assert message(completion)["tool_calls"][0]["function"]["name"] == "functions.lookup"


def test_tool_choice_none_drops_calls_the_model_made_anyway() -> None:
    ctx = context(
        tool_choice="none", tools=[{"type": "function", "function": {"name": "get_weather"}}]
    )
    completion = parse_response(answer([text("Sunny."), CALL], "tool_use"), ctx)
    assert "tool_calls" not in message(completion)
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert ctx.headers == {"x-toolrelay-dropped-tool-calls": "1"}


def test_parallel_tool_calls_false_keeps_the_first_call() -> None:
    ctx = context(
        parallel_tool_calls=False, tools=[{"type": "function", "function": {"name": "get_weather"}}]
    )
    completion = parse_response(answer([CALL, CALL_2], "tool_use"), ctx)
    assert [call["id"] for call in message(completion)["tool_calls"]] == ["tooluse_1"]


def test_structured_tool_answer_becomes_content() -> None:
    provider = ProviderConfig.model_construct(
        kind="bedrock", base_url="http://b", api_key=None, headers={}
    )
    target = Target("c", "aws", provider, "m", structured_output="tool")
    ctx = dataclasses.replace(context(response_format={"type": "json_object"}), target=target)
    completion = TRANSLATOR.parse_response(
        answer([tool_use("t1", "json_response", {"n": 1})], "tool_use"), ctx
    )
    assert message(completion)["content"] == '{"n":1}'
    assert completion["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    "body", [b"not json", b"[]", b'{"output": {}}', b'{"stopReason": "end_turn"}']
)
def test_bodies_that_are_not_a_converse_answer_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(UpstreamProtocolError):
        parse_response(body, context())


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error_type", "http_status", "status", "retryable"),
    [
        ("ThrottlingException", 429, 429, True),
        ("ModelNotReadyException", 429, 429, True),
        ("ValidationException", 400, 400, False),
        ("AccessDeniedException", 403, 403, False),
        ("ResourceNotFoundException", 404, 404, False),
        ("ServiceUnavailableException", 503, 502, True),
        ("InternalServerException", 500, 502, True),
        ("ModelTimeoutException", 408, 502, True),
        ("ModelErrorException", 424, 502, True),
        ("ModelStreamErrorException", 424, 502, True),
        ("SomethingNewException", 400, 502, True),
    ],
)
def test_every_error_type(error_type: str, http_status: int, status: int, retryable: bool) -> None:
    headers = {
        "x-amzn-errortype": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    }
    error = parse_error(http_status, b'{"message": "What Bedrock said."}', headers)
    assert isinstance(error, UpstreamStatusError)
    assert (error.status, error.retryable, error.message) == (
        status,
        retryable,
        "What Bedrock said.",
    )
    assert error.code == error_type


def test_every_converse_error_in_botocore_is_mapped_or_an_upstream_failure() -> None:
    operation = service_model().operation_model("Converse")
    for shape in operation.error_shapes:
        declared = shape.metadata["error"]["httpStatusCode"]
        error = parse_error(declared, b'{"message": "m"}', {"X-Amzn-ErrorType": shape.name})
        assert error.status == (declared if declared in (400, 403, 404, 429) else 502), shape.name


def test_error_message_capitalised_retry_after_kept_and_junk_bodies() -> None:
    headers = {"x-amzn-errortype": "ThrottlingException", "Retry-After": "3"}
    error = parse_error(429, orjson.dumps({"Message": "Too many tokens"}), headers)
    assert (error.message, error.headers) == ("Too many tokens", {"retry-after": "3"})
    junk = parse_error(502, b"<html>bad gateway</html>", {})
    assert (junk.status, junk.message) == (502, "the bedrock upstream answered HTTP 502")
