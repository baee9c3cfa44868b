"""Anthropic answers -> OpenAI: HTTP error mapping, stop reasons, usage arithmetic, and
non-stream answers the transcripts do not cover (odd blocks, malformed bodies)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import UpstreamProtocolError, UpstreamStatusError
from app.openai_types import parse_chat_request
from app.translators.anthropic.response import parse_error, parse_response
from app.translators.anthropic.stream import finish_reason, openai_usage
from app.translators.base import ResponseContext

REQUEST = parse_chat_request(b'{"model":"claude","messages":[{"role":"user","content":"hi"}]}')
CTX = ResponseContext("chatcmpl-test", 1700000000, "claude", REQUEST)

# --- errors -------------------------------------------------------------------------------------


def anthropic_error(error_type: str, message: str) -> bytes:
    return orjson.dumps(
        {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_011",
        }
    )


@pytest.mark.parametrize(
    ("status", "upstream_body", "status_out", "type_out", "message"),
    [
        (
            400,
            anthropic_error("invalid_request_error", "messages.1: bad"),
            400,
            "invalid_request_error",
            "messages.1: bad",
        ),
        (
            401,
            anthropic_error("authentication_error", "invalid x-api-key"),
            401,
            "authentication_error",
            "invalid x-api-key",
        ),
        (402, anthropic_error("billing_error", "credit"), 402, "insufficient_quota", "credit"),
        (403, anthropic_error("permission_error", "no"), 403, "permission_error", "no"),
        (404, anthropic_error("not_found_error", "model: x"), 404, "not_found_error", "model: x"),
        (
            413,
            b"<html>Request Entity Too Large</html>",
            413,
            "invalid_request_error",
            "the anthropic upstream answered HTTP 413",
        ),
        (
            429,
            anthropic_error("rate_limit_error", "slow down"),
            429,
            "rate_limit_error",
            "slow down",
        ),
        (
            500,
            anthropic_error("api_error", "Internal server error"),
            502,
            "api_error",
            "Internal server error",
        ),
        (
            529,
            anthropic_error("overloaded_error", "Overloaded"),
            502,
            "overloaded_error",
            "Overloaded",
        ),
        (503, b"", 502, "api_error", "the anthropic upstream answered HTTP 503"),
        (400, b"[1]", 400, "invalid_request_error", "the anthropic upstream answered HTTP 400"),
        (400, anthropic_error("brand_new_error", "x"), 400, "invalid_request_error", "x"),
        (
            400,
            b'{"error": {"message": ""}}',
            400,
            "invalid_request_error",
            "the anthropic upstream answered HTTP 400",
        ),
    ],
)
def test_parse_error(
    status: int, upstream_body: bytes, status_out: int, type_out: str, message: str
) -> None:
    error = parse_error(status, upstream_body, {"request-id": "req_011"})
    assert isinstance(error, UpstreamStatusError)
    assert (error.status, error.type, error.message) == (status_out, type_out, message)
    assert error.upstream_status == status
    assert error.headers == {}


@pytest.mark.parametrize(
    ("status", "retryable"), [(429, True), (529, True), (500, True), (400, False), (401, False)]
)
def test_retryable_statuses(status: int, retryable: bool) -> None:
    assert parse_error(status, b"", {}).retryable is retryable


def test_rate_limit_keeps_retry_after_headers_only() -> None:
    headers = {
        "Retry-After": "12",
        "retry-after-ms": "11500",
        "x-api-key": "sk-ant-1",
        "anthropic-ratelimit-requests-remaining": "0",
    }
    error = parse_error(429, anthropic_error("rate_limit_error", "slow"), headers)
    assert error.headers == {"retry-after": "12", "retry-after-ms": "11500"}


# --- stop reasons and usage ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop_reason", "calls", "finish"),
    [
        ("end_turn", False, "stop"),
        ("end_turn", True, "tool_calls"),
        ("stop_sequence", False, "stop"),
        ("pause_turn", False, "stop"),
        ("max_tokens", False, "length"),
        ("max_tokens", True, "length"),
        ("model_context_window_exceeded", False, "length"),
        ("tool_use", True, "tool_calls"),
        ("tool_use", False, "stop"),
        ("refusal", False, "content_filter"),
        ("refusal", True, "content_filter"),
        (None, False, "stop"),
        (None, True, "tool_calls"),
        ("something_new", False, "stop"),
        (["odd"], False, "stop"),
    ],
)
def test_finish_reason(stop_reason: Any, calls: bool, finish: str) -> None:
    assert finish_reason(stop_reason, calls) == finish


@pytest.mark.parametrize(
    ("anthropic_usage", "openai"),
    [
        (
            {},
            {
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "total_tokens": 0,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        ),
        (
            {
                "input_tokens": 3,
                "cache_creation_input_tokens": None,
                "cache_read_input_tokens": None,
                "output_tokens": None,
            },
            {
                "prompt_tokens": 3,
                "completion_tokens": 0,
                "total_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        ),
        (
            {
                "input_tokens": 1,
                "cache_creation_input_tokens": 2,
                "cache_read_input_tokens": 30,
                "output_tokens": 9,
                "output_tokens_details": {"thinking_tokens": 4},
            },
            {
                "prompt_tokens": 33,
                "completion_tokens": 9,
                "total_tokens": 42,
                "prompt_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 2},
                "completion_tokens_details": {"reasoning_tokens": 4},
            },
        ),
    ],
)
def test_usage(anthropic_usage: dict[str, Any], openai: dict[str, Any]) -> None:
    assert openai_usage(anthropic_usage) == openai


# --- non-stream --------------------------------------------------------------------------------


def answer(
    content: list[Any], stop_reason: str | None = "end_turn", **fields: Any
) -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 1, "output_tokens": 2},
        **fields,
    }
    return parse_response(orjson.dumps(message), CTX)


def test_server_tools_redacted_thinking_and_unknown_blocks_are_not_tool_calls() -> None:
    completion = answer(
        [
            {"type": "redacted_thinking", "data": "EmwK"},
            {"type": "text", "text": "Searching. "},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "brand_new_block", "x": 1},
            "not a block",
            {
                "type": "text",
                "text": "Sunny.",
                "citations": [{"type": "web_search_result_location"}],
            },
        ],
        stop_reason="tool_use",
    )
    choice = completion["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": "Searching. Sunny.",
        "refusal": None,
        "thinking_blocks": [{"type": "redacted_thinking", "data": "EmwK"}],
    }
    assert choice["finish_reason"] == "stop"


def test_an_empty_answer_has_null_content() -> None:
    completion = answer([], stop_reason=None, usage=None)
    message = {"role": "assistant", "content": None, "refusal": None}
    assert completion["choices"][0]["message"] == message
    assert completion["choices"][0]["logprobs"] is None  # OpenAI's spec: required, nullable
    assert completion["usage"]["total_tokens"] == 0


@pytest.mark.parametrize(
    "upstream_body",
    [
        b"not json",
        b"[]",
        b'{"type": "message"}',
        b'{"content": "text"}',
        b'{"content": [{"type": "tool_use", "name": "f", "input": {}}]}',
        b'{"content": [{"type": "tool_use", "id": "t", "input": {}}]}',
    ],
)
def test_malformed_answers_are_protocol_errors(upstream_body: bytes) -> None:
    with pytest.raises(UpstreamProtocolError):
        parse_response(upstream_body, CTX)
