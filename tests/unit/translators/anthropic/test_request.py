"""OpenAI request fields -> Anthropic Messages request fields: what is refused (naming the
param), what is accepted and not sent, and how tools, limits, sampling and headers map."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.translators.anthropic.request import DEFAULT_MAX_TOKENS
from app.translators.base import Target
from tests.helpers.anthropic_requests import (
    PROVIDER,
    TOOLS,
    body,
    refusal,
    send,
)

# --- refused fields -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n", 2),
        ("logprobs", True),
        ("top_logprobs", 2),
        ("seed", 7),
        ("frequency_penalty", 0.5),
        ("presence_penalty", -1),
        ("logit_bias", {"50256": -100}),
        ("functions", [{"name": "f"}]),
        ("function_call", "auto"),
        ("audio", {"voice": "alloy", "format": "wav"}),
        ("modalities", ["text", "audio"]),
        ("prediction", {"type": "content", "content": "x"}),
        ("web_search_options", {}),
        ("verbosity", "low"),
        ("vendor_field", [1]),
    ],
)
def test_fields_anthropic_cannot_honour_are_refused_by_name(field: str, value: Any) -> None:
    error = refusal(**{field: value})
    assert error.param == field
    assert f"'{field}'" in error.message
    assert "anthropic" in error.message


def test_a_refused_default_field_says_which_value_is_accepted() -> None:
    assert "(only its default, 0, is accepted)" in refusal(frequency_penalty=1).message


@pytest.mark.parametrize(
    "fields",
    [
        {"n": 1},
        {"logprobs": False},
        {"frequency_penalty": 0, "presence_penalty": 0.0},
        {"logit_bias": {}},
        {"response_format": {"type": "text"}},
        {"modalities": ["text"]},
        {"functions": []},
        {"seed": None, "top_logprobs": None, "verbosity": None},
        {"store": True, "metadata": {"tag": "x"}, "service_tier": "flex"},
        {"prompt_cache_key": "k", "prompt_cache_retention": "24h"},
        {"stream_options": {"include_usage": True}},
    ],
    ids=",".join,
)
def test_defaults_and_openai_only_bookkeeping_are_accepted_and_not_sent(
    fields: dict[str, Any],
) -> None:
    assert set(body(**fields)) == {"model", "max_tokens", "messages", "stream"}


@pytest.mark.parametrize("stop", ["  ", "", ["END", "\n"]])
def test_blank_stop_sequences_are_refused(stop: str | list[str]) -> None:
    assert refusal(stop=stop).param == "stop"


@pytest.mark.parametrize(("stop", "sequences"), [("END", ["END"]), (["a", "b"], ["a", "b"])])
def test_stop_becomes_a_list_of_stop_sequences(stop: str | list[str], sequences: list[str]) -> None:
    assert body(stop=stop)["stop_sequences"] == sequences


def test_an_empty_stop_list_sends_nothing() -> None:
    assert "stop_sequences" not in body(stop=[])


# --- tools, tool_choice, limits, sampling, headers ------------------------------------------------


def test_tool_definitions() -> None:
    tools = [
        {"type": "function", "function": {"name": "a"}},
        {"type": "function", "function": {"name": "b", "description": "B", "parameters": {}}},
        {"type": "function", "function": {"name": "c", "parameters": {"properties": {}}}},
        {
            "type": "function",
            "function": {
                "name": "d",
                "strict": True,
                "parameters": {"type": "object"},
            },
        },
    ]
    assert body(tools=tools)["tools"] == [
        {"name": "a", "input_schema": {"type": "object", "properties": {}}},
        {"name": "b", "description": "B", "input_schema": {"type": "object", "properties": {}}},
        {"name": "c", "input_schema": {"type": "object", "properties": {}}},
        {"name": "d", "input_schema": {"type": "object"}},
    ]


@pytest.mark.parametrize(
    ("fields", "tool_choice"),
    [
        ({}, None),
        ({"parallel_tool_calls": True}, None),
        ({"tool_choice": "auto", "parallel_tool_calls": True}, {"type": "auto"}),
        ({"tool_choice": "none", "parallel_tool_calls": False}, {"type": "none"}),
        (
            {
                "tool_choice": {"type": "function", "function": {"name": "f"}},
                "parallel_tool_calls": False,
            },
            {"type": "tool", "name": "f", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_tool_choice(fields: dict[str, Any], tool_choice: dict[str, Any] | None) -> None:
    upstream_body = body(tools=TOOLS, **fields)
    assert upstream_body.get("tool_choice") == tool_choice
    assert upstream_body["tools"]


@pytest.mark.parametrize(
    "fields",
    [{"tool_choice": "none"}, {"tools": [], "tool_choice": "auto"}, {"parallel_tool_calls": False}],
)
def test_no_tools_means_no_tool_choice(fields: dict[str, Any]) -> None:
    assert not {"tools", "tool_choice"} & set(body(**fields))


@pytest.mark.parametrize(
    ("fields", "model_default", "max_tokens"),
    [
        ({}, None, DEFAULT_MAX_TOKENS),
        ({}, 1000, 1000),
        ({"max_tokens": 300}, 1000, 300),
        ({"max_tokens": 300, "max_completion_tokens": 200}, None, 200),
        ({"max_completion_tokens": 1}, 1000, 1),
    ],
)
def test_max_tokens_precedence(
    fields: dict[str, Any], model_default: int | None, max_tokens: int
) -> None:
    target = Target("claude", "an", PROVIDER, "claude-sonnet-4-5", max_tokens=model_default)
    assert orjson.loads(send(target, **fields).body)["max_tokens"] == max_tokens


@pytest.mark.parametrize(
    ("fields", "metadata"),
    [
        ({"user": "u1"}, {"user_id": "u1"}),
        ({"safety_identifier": "s1"}, {"user_id": "s1"}),
        ({"user": "u1", "safety_identifier": "s1"}, {"user_id": "u1"}),
        ({}, None),
    ],
)
def test_user_ids_become_metadata(fields: dict[str, Any], metadata: dict[str, str] | None) -> None:
    assert body(**fields).get("metadata") == metadata


def test_sampling_fields_are_copied() -> None:
    upstream_body = body(temperature=0.2, top_p=0.5, top_k=5, stream=True)
    assert (upstream_body["temperature"], upstream_body["top_p"], upstream_body["top_k"]) == (
        0.2,
        0.5,
        5,
    )
    assert upstream_body["stream"] is True


def test_url_and_headers() -> None:
    upstream_request = send()
    assert upstream_request.url == "http://up.test/v1/messages"
    assert upstream_request.headers == {
        "x-api-key": "sk-ant-1",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert upstream_request.stream is False


def test_configured_headers_are_added_and_win_whatever_their_case() -> None:
    extra = {"Anthropic-Version": "2099-01-01", "anthropic-beta": "context-1m-2025-08-07"}
    provider = PROVIDER.model_copy(update={"headers": extra, "api_key": None})
    headers = send(Target("claude", "an", provider, "m")).headers
    assert headers == {"content-type": "application/json", **extra}
