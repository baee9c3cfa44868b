"""Gemini answers and errors -> OpenAI, beyond the transcripts: the finish-reason table, usage
arithmetic, call ids, signatures in odd places, malformed bodies, and error mapping."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.errors import UpstreamProtocolError, UpstreamStatusError
from app.openai_types import parse_chat_request
from app.translators.base import ResponseContext
from app.translators.gemini.errors import parse_error
from app.translators.gemini.ids import signature_of
from app.translators.gemini.response import finish_reason, openai_usage, parse_response

REQUEST = parse_chat_request(b'{"model":"gemini","messages":[{"role":"user","content":"hi"}]}')
CTX = ResponseContext("chatcmpl-test", 1700000000, "gemini", REQUEST)
WEATHER = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
TIME = {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}}


def parse(gemini_body: Any) -> dict[str, Any]:
    return parse_response(orjson.dumps(gemini_body), CTX)


def candidate_body(parts: list[Any], finish: str | None = "STOP") -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]}


def message(gemini_body: Any) -> dict[str, Any]:
    choice: dict[str, Any] = parse(gemini_body)["choices"][0]
    return choice


@pytest.mark.parametrize(
    ("gemini_reason", "expected"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("LANGUAGE", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("IMAGE_SAFETY", "content_filter"),
        ("OTHER", "stop"),
        ("UNEXPECTED_TOOL_CALL", "stop"),
        ("TOO_MANY_TOOL_CALLS", "stop"),
        ("FINISH_REASON_UNSPECIFIED", "stop"),
        ("SOMETHING_NEW", "stop"),
        (None, "stop"),
        (7, "stop"),
    ],
)
def test_finish_reasons_without_calls(gemini_reason: Any, expected: str) -> None:
    assert finish_reason(gemini_reason, has_calls=False) == expected


@pytest.mark.parametrize("gemini_reason", ["STOP", "MAX_TOKENS", "SAFETY", None])
def test_any_call_makes_the_finish_tool_calls(gemini_reason: Any) -> None:
    assert finish_reason(gemini_reason, has_calls=True) == "tool_calls"


def test_usage_counts_thoughts_as_completion_and_tool_prompts_as_prompt() -> None:
    usage = openai_usage(
        {
            "promptTokenCount": 100,
            "cachedContentTokenCount": 60,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
            "toolUsePromptTokenCount": 5,
            "totalTokenCount": 155,
        }
    )
    assert usage == {
        "prompt_tokens": 105,
        "completion_tokens": 50,
        "total_tokens": 155,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }


@pytest.mark.parametrize("usage_metadata", [None, {}, {"promptTokenCount": "9"}, [1]])
def test_missing_or_odd_usage_counts_read_as_zero(usage_metadata: Any) -> None:
    usage = openai_usage(usage_metadata)
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (0, 0, 0)


def test_call_ids_are_unique_and_the_signature_is_on_the_first_only() -> None:
    signed_weather = {**WEATHER, "thoughtSignature": "c2lnbmF0dXJl"}
    calls = message(candidate_body([signed_weather, TIME, WEATHER]))["message"]["tool_calls"]
    ids = [call["id"] for call in calls]
    assert len(set(ids)) == 3
    assert [signature_of(call_ref) for call_ref in ids] == ["c2lnbmF0dXJl", None, None]
    assert [call["function"]["arguments"] for call in calls] == [
        '{"city":"Paris"}',
        '{"tz":"CET"}',
        '{"city":"Paris"}',
    ]


def test_a_trailing_signature_reaches_an_unsigned_call_but_never_displaces_one() -> None:
    trailing = {"text": "", "thoughtSignature": "dHJhaWxpbmc="}
    unsigned = message(candidate_body([WEATHER, TIME, trailing]))["message"]["tool_calls"]
    assert [signature_of(call["id"]) for call in unsigned] == ["dHJhaWxpbmc=", None]
    signed = message(candidate_body([{**WEATHER, "thoughtSignature": "Zmlyc3Q="}, trailing]))
    assert signature_of(signed["message"]["tool_calls"][0]["id"]) == "Zmlyc3Q="


def test_a_signature_before_any_call_is_not_taken_for_the_calls() -> None:
    parts = [{"text": "", "thoughtSignature": "dGV4dA=="}, WEATHER]
    (call,) = message(candidate_body(parts))["message"]["tool_calls"]
    assert signature_of(call["id"]) is None


def test_calls_without_args_get_an_empty_object_and_server_parts_are_skipped() -> None:
    parts = [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},
        {"functionCall": {"name": "now"}},
        "not a part",
    ]
    choice = message(candidate_body(parts))
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_text_and_thoughts_are_concatenated_in_order() -> None:
    parts = [
        {"text": "a", "thought": True},
        {"text": "B"},
        {"text": "b", "thought": True},
        {"text": "C", "thoughtSignature": "c2ln"},
    ]
    choice = message(candidate_body(parts))
    assert choice["message"]["content"] == "BC"
    assert choice["message"]["reasoning_content"] == "ab"


def test_the_first_candidate_is_candidate_zero() -> None:
    gemini_body = {
        "candidates": [
            {"index": 1, "content": {"parts": [{"text": "second"}]}, "finishReason": "STOP"},
            {"content": {"parts": [{"text": "first"}]}, "finishReason": "STOP"},
        ]
    }
    assert message(gemini_body)["message"]["content"] == "first"


@pytest.mark.parametrize(
    ("upstream_body", "text"),
    [
        (b"<html>oops</html>", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"candidates": []}', "without a candidate"),
        (b'{"usageMetadata": {}}', "without a candidate"),
        (b'{"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}', "name"),
    ],
)
def test_malformed_answers_are_protocol_errors(upstream_body: bytes, text: str) -> None:
    with pytest.raises(UpstreamProtocolError) as caught:
        parse_response(upstream_body, CTX)
    assert text in caught.value.message


def test_malformed_function_call_is_a_502_naming_it() -> None:
    gemini_body = {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}
    with pytest.raises(UpstreamProtocolError) as caught:
        parse(gemini_body)
    assert caught.value.status == 502
    assert caught.value.code == "malformed_function_call"


# --- errors ---------------------------------------------------------------------------------------


def error_body(status: str, code: int = 400, **extra: Any) -> bytes:
    return orjson.dumps({"error": {"code": code, "message": "Nope.", "status": status, **extra}})


@pytest.mark.parametrize(
    ("status", "grpc_status", "expected_status", "expected_type"),
    [
        (400, "FAILED_PRECONDITION", 400, "invalid_request_error"),
        (403, "PERMISSION_DENIED", 403, "permission_error"),
        (404, "NOT_FOUND", 404, "not_found_error"),
        (429, "RESOURCE_EXHAUSTED", 429, "rate_limit_error"),
        (500, "INTERNAL", 502, "api_error"),
        (504, "DEADLINE_EXCEEDED", 502, "timeout_error"),
        (418, "SOMETHING_NEW", 418, "invalid_request_error"),
    ],
)
def test_http_errors_keep_status_and_map_the_grpc_status(
    status: int, grpc_status: str, expected_status: int, expected_type: str
) -> None:
    error = parse_error(status, error_body(grpc_status, status), {})
    assert isinstance(error, UpstreamStatusError)
    assert (error.status, error.type, error.code) == (expected_status, expected_type, grpc_status)
    assert error.message == "Nope."


@pytest.mark.parametrize("upstream_body", [b"", b"<html>502</html>", b'{"error": "x"}', b"[1, 2]"])
def test_an_error_body_that_is_not_geminis_gets_a_plain_message(upstream_body: bytes) -> None:
    error = parse_error(503, upstream_body, {})
    assert (error.status, error.message) == (502, "the gemini upstream answered HTTP 503")
    assert error.retryable


def test_retry_after_headers_win_over_retry_info_and_others_are_not_kept() -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}
    upstream_body = error_body("RESOURCE_EXHAUSTED", 429, details=[retry_info])
    headers = {"Retry-After-Ms": "1500", "x-other": "1"}
    error = parse_error(429, upstream_body, headers)
    assert error.headers == {"retry-after-ms": "1500"}
    assert parse_error(429, upstream_body, {}).headers == {
        "retry-after": "30",
        "retry-after-ms": "30000",
    }


@pytest.mark.parametrize("delay", ["soon", 30, "-1s", "1m"])
def test_an_unreadable_retry_delay_gives_no_header(delay: Any) -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    upstream_body = error_body("RESOURCE_EXHAUSTED", 429, details=[retry_info, "junk"])
    assert parse_error(429, upstream_body, {}).headers == {}


SINGLE_CALL_REQUEST = parse_chat_request(
    orjson.dumps(
        {
            "model": "gemini",
            "messages": [{"role": "user", "content": "hi"}],
            "parallel_tool_calls": False,
        }
    )
)


def test_parallel_tool_calls_false_keeps_the_first_call_and_says_how_many_were_cut() -> None:
    ctx = ResponseContext("chatcmpl-test", 1700000000, "gemini", SINGLE_CALL_REQUEST)
    signed_weather = {**WEATHER, "thoughtSignature": "c2ln"}
    completion = parse_response(orjson.dumps(candidate_body([signed_weather, TIME])), ctx)
    choice = completion["choices"][0]
    (call,) = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    assert signature_of(call["id"]) == "c2ln"
    assert choice["finish_reason"] == "tool_calls"
    assert ctx.headers == {"x-toolrelay-dropped-tool-calls": "1"}


def test_parallel_tool_calls_false_with_one_call_adds_no_header() -> None:
    ctx = ResponseContext("chatcmpl-test", 1700000000, "gemini", SINGLE_CALL_REQUEST)
    parse_response(orjson.dumps(candidate_body([WEATHER])), ctx)
    assert ctx.headers == {}
