"""An Anthropic Messages request body -> the chat wire (and validated ChatRequest): what is
mapped, what is dropped as a hint, and what is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidRequest
from app.faces.messages.request import chat_request, chat_wire

USER = {"role": "user", "content": "hi"}
CHAT_USER = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
TOOL = {
    "name": "read",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "description": "Read a file.",
    },
}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "claude", "max_tokens": 100, "messages": [USER], **fields}


def messages_wire(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages, after checking that ChatRequest accepts them."""
    wire: list[dict[str, Any]] = chat_request(body(messages=list(messages))).wire["messages"]
    return wire


def extra_fields(**fields: Any) -> dict[str, Any]:
    """The validated wire minus what every request here has."""
    wire = chat_request(body(**fields)).wire
    common = ("model", "messages", "max_completion_tokens")
    return {k: v for k, v in wire.items() if k not in common}


# --- system ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        ("Be brief.", [{"role": "system", "content": "Be brief."}]),
        (
            [
                {"type": "text", "text": "One."},
                {"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Three.", "cache_control": {"type": "ephemeral"}},
            ],
            [  # each block a part, keeping its breakpoint (test_prompt_cache.py)
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "One."},
                        {"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": "Three.", "cache_control": {"type": "ephemeral"}},
                    ],
                }
            ],
        ),
        (
            [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
            [{"role": "system", "content": "One.\n\nTwo."}],
        ),
        ("", []),
        ([], []),
    ],
    ids=["string", "blocks-with-cache-control", "blocks", "empty-string", "empty-list"],
)
def test_system_becomes_a_leading_system_message(system: Any, expected: list[Any]) -> None:
    assert chat_wire(body(system=system))["messages"] == [*expected, CHAT_USER]


def test_system_role_message_stays_in_place() -> None:
    wire = messages_wire(USER, {"role": "system", "content": "Reminder."})
    assert wire == [CHAT_USER, {"role": "system", "content": "Reminder."}]


def test_system_blocks_other_than_text_are_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"^system\.0: only text blocks are allowed here$"):
        chat_wire(body(system=[{"type": "image"}]))


# --- user content ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("hello", [{"type": "text", "text": "hello"}]),
        (
            [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            ],
            [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            ],
        ),
        (
            [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                }
            ],
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}],
        ),
        (
            [{"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}],
            [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
        ),
    ],
    ids=["string", "text-blocks", "image-base64", "image-url"],
)
def test_user_content_becomes_parts(content: Any, expected: list[Any]) -> None:
    assert messages_wire({"role": "user", "content": content}) == [
        {"role": "user", "content": expected}
    ]


@pytest.mark.parametrize(
    "block",
    [{"type": "search_result"}, {"type": "image", "source": {"type": "file", "file_id": "f"}}],
    ids=["search-result", "image-file-source"],
)
def test_user_blocks_we_cannot_carry_are_refused(block: dict[str, Any]) -> None:
    kind = block["type"]
    expected = rf"^messages\.0\.content\.0: '{kind}' blocks cannot be carried"
    with pytest.raises(InvalidRequest, match=expected):
        messages_wire({"role": "user", "content": [block]})


# --- assistant history -------------------------------------------------------------------------


def test_tool_use_becomes_tool_calls_with_json_arguments() -> None:
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
        ],
    }
    assert messages_wire(USER, assistant)[1] == {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"a.py"}'},
            }
        ],
    }


@pytest.mark.parametrize("kind", ["thinking", "redacted_thinking"])
def test_thinking_blocks_in_history_are_dropped(kind: str) -> None:
    assistant = {
        "role": "assistant",
        "content": [
            {"type": kind, "thinking": "Hmm.", "data": "x", "signature": "c2ln"},
            {"type": "text", "text": "Done."},
        ],
    }
    assert messages_wire(USER, assistant)[1] == {"role": "assistant", "content": "Done."}


# --- tool results ------------------------------------------------------------------------------


def test_tool_results_come_first_as_tool_messages_then_the_user_text() -> None:
    user = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "two"},
            {"type": "text", "text": "Go on."},
        ],
    }
    assert messages_wire(user) == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": "one"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "two"},
        {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    ]


PNG = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
PNG_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (
            {"content": "ok"},
            [{"role": "tool", "tool_call_id": "toolu_1", "content": "ok"}],
        ),
        (
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            [{"role": "tool", "tool_call_id": "toolu_1", "content": "a\nb"}],
        ),
        (
            {},
            [{"role": "tool", "tool_call_id": "toolu_1", "content": ""}],
        ),
        (
            {"content": "boom", "is_error": True},
            [{"role": "tool", "tool_call_id": "toolu_1", "content": "Error: boom"}],
        ),
        (
            {"content": [{"type": "text", "text": "shot"}, PNG]},
            [
                {"role": "tool", "tool_call_id": "toolu_1", "content": "shot"},
                {"role": "user", "content": [PNG_PART]},
            ],
        ),
    ],
    ids=["string", "text-blocks", "no-content", "is-error", "image-to-next-user-message"],
)
def test_tool_result_content(result: dict[str, Any], expected: list[Any]) -> None:
    block = {"type": "tool_result", "tool_use_id": "toolu_1", **result}
    assert messages_wire({"role": "user", "content": [block]}) == expected


def test_tool_result_image_precedes_the_turns_own_text() -> None:
    user = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [PNG]},
            {"type": "text", "text": "See?"},
        ],
    }
    assert messages_wire(user) == [
        {"role": "tool", "tool_call_id": "toolu_1", "content": ""},
        {"role": "user", "content": [PNG_PART, {"type": "text", "text": "See?"}]},
    ]


# --- tools -------------------------------------------------------------------------------------


def test_tools_become_function_tools() -> None:
    assert chat_wire(body(tools=[TOOL]))["tools"] == [CHAT_TOOL]


def test_custom_type_tool_is_a_function_without_description() -> None:
    tool = {"type": "custom", "name": "f", "input_schema": {"type": "object"}}
    assert chat_wire(body(tools=[tool]))["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ]


def test_tool_schema_2020_12_keys_are_kept_as_is() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}},
        "required": ["n"],
        "additionalProperties": False,
    }
    wire = chat_wire(body(tools=[{"name": "f", "input_schema": schema}]))
    assert wire["tools"][0]["function"]["parameters"] == schema


def test_server_tool_is_refused_by_name() -> None:
    tool = {"type": "web_search_20250305", "name": "web_search"}
    expected = r"^tools\.1: the server tool type 'web_search_20250305' runs only on anthropic"
    with pytest.raises(InvalidRequest, match=expected) as caught:
        chat_wire(body(tools=[TOOL, tool]))
    assert caught.value.param == "tools.1"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        ({"type": "none"}, {"tool_choice": "none"}),
        (
            {"type": "tool", "name": "read"},
            {"tool_choice": {"type": "function", "function": {"name": "read"}}},
        ),
        (
            {"type": "auto", "disable_parallel_tool_use": True},
            {"tool_choice": "auto", "parallel_tool_calls": False},
        ),
        (
            {"type": "any", "disable_parallel_tool_use": True},
            {"tool_choice": "required", "parallel_tool_calls": False},
        ),
        (
            {"type": "tool", "name": "read", "disable_parallel_tool_use": True},
            {
                "tool_choice": {"type": "function", "function": {"name": "read"}},
                "parallel_tool_calls": False,
            },
        ),
        ({"type": "none", "disable_parallel_tool_use": True}, {"tool_choice": "none"}),
        ({"type": "auto", "disable_parallel_tool_use": False}, {"tool_choice": "auto"}),
    ],
    ids=[
        "auto",
        "any",
        "none",
        "tool",
        "auto-no-parallel",
        "any-no-parallel",
        "tool-no-parallel",
        "none-ignores-parallel",
        "parallel-allowed",
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    wire = chat_wire(body(tools=[TOOL], tool_choice=choice))
    assert {k: wire[k] for k in ("tool_choice", "parallel_tool_calls") if k in wire} == expected


def test_unknown_tool_choice_is_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"^tool_choice: type must be"):
        chat_wire(body(tools=[TOOL], tool_choice={"type": "sometimes"}))


# --- generation fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, {}),
        ({"stop_sequences": ["END", "STOP"]}, {"stop": ["END", "STOP"]}),
        ({"stop_sequences": []}, {}),
        ({"temperature": 0.2}, {"temperature": 0.2}),
        ({"top_p": 0.9}, {"top_p": 0.9}),
        ({"top_k": 40}, {"top_k": 40}),
        ({"temperature": None}, {}),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, {"reasoning_effort": "low"}),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 5000}},
            {"reasoning_effort": "medium"},
        ),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 20000}},
            {"reasoning_effort": "high"},
        ),
        ({"thinking": {"type": "adaptive"}}, {}),
        ({"thinking": {"type": "disabled"}}, {}),
        ({"output_config": {"effort": "high"}}, {}),
        ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}, {}),
        (
            {
                "output_config": {
                    "format": {"type": "json_schema", "schema": {"type": "object"}},
                }
            },
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": {"type": "object"}, "strict": True},
                }
            },
        ),
        ({"stream": True}, {"stream": True, "stream_options": {"include_usage": True}}),
        ({"stream": False}, {}),
    ],
    ids=[
        "nothing",
        "stop-sequences",
        "empty-stop-sequences",
        "temperature",
        "top-p",
        "top-k",
        "null-temperature",
        "budget-1024-low",
        "budget-5000-medium",
        "budget-20000-high",
        "thinking-adaptive",
        "thinking-disabled",
        "output-effort",
        "adaptive-and-effort",
        "output-format-json-schema",
        "stream",
        "no-stream",
    ],
)
def test_generation_fields(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    assert extra_fields(**fields) == expected


# Anthropic's documented shape (and its SDK's `messages.parse(output_format=Model)`): a schema
# with `$defs`/`$ref` and `additionalProperties: false`, carried as given.
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "home": {"$ref": "#/$defs/A"}},
    "required": ["name", "home"],
    "additionalProperties": False,
    "$defs": {"A": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
PERSON_FORMAT = {"type": "json_schema", "schema": PERSON}
PERSON_RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "output", "schema": PERSON, "strict": True},
}


def test_output_config_format_becomes_response_format_beside_effort() -> None:
    fields = extra_fields(output_config={"format": PERSON_FORMAT, "effort": "low"})
    assert fields == {"response_format": PERSON_RESPONSE_FORMAT}


def test_the_betas_top_level_output_format_is_taken_too() -> None:
    assert extra_fields(output_format=PERSON_FORMAT) == {"response_format": PERSON_RESPONSE_FORMAT}
    assert extra_fields(output_format=None, output_config={"format": None}) == {}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"output_config": {"format": {"type": "json_object"}}}, "output_config.format"),
        ({"output_config": {"format": {"type": "json_schema"}}}, "output_config.format.schema"),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": []}}},
            "output_config.format.schema",
        ),
        ({"output_config": "json"}, "output_config"),
        (
            {"output_format": PERSON_FORMAT, "output_config": {"format": PERSON_FORMAT}},
            "output_format",
        ),
    ],
)
def test_an_output_format_that_cannot_be_carried_is_refused(
    fields: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_wire(body(**fields))
    assert caught.value.param == param


def test_max_tokens_becomes_max_completion_tokens() -> None:
    wire = chat_wire(body(max_tokens=321))
    assert wire["max_completion_tokens"] == 321
    assert "max_tokens" not in wire


@pytest.mark.parametrize("max_tokens", [None, 0, -1, "100", True, 1.5])
def test_missing_or_bad_max_tokens_is_refused(max_tokens: Any) -> None:
    request = body(max_tokens=max_tokens)
    if max_tokens is None:
        del request["max_tokens"]
    with pytest.raises(InvalidRequest, match=r"^max_tokens: Field required") as caught:
        chat_wire(request)
    assert caught.value.param == "max_tokens"


def test_count_only_allows_max_tokens_missing() -> None:
    request = body()
    del request["max_tokens"]
    assert "max_completion_tokens" not in chat_wire(request, count_only=True)
    assert chat_request(request, count_only=True).max_completion_tokens is None


def test_count_only_still_refuses_a_bad_max_tokens() -> None:
    with pytest.raises(InvalidRequest, match=r"^max_tokens:"):
        chat_wire(body(max_tokens=0), count_only=True)


def test_thinking_enabled_without_budget_is_refused() -> None:
    with pytest.raises(
        InvalidRequest, match=r"^thinking\.enabled\.budget_tokens: Input should be an integer"
    ):
        chat_wire(body(thinking={"type": "enabled"}))


def test_output_format_other_than_json_schema_is_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"^output_config\.format: only type 'json_schema'"):
        chat_wire(body(output_config={"format": {"type": "text"}}))


# --- hints and unknown fields ------------------------------------------------------------------


@pytest.mark.parametrize(
    "hint",
    [
        {"metadata": {"tags": "x"}},
        {"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}},
        {"cache_control": {"type": "ephemeral"}},
        {"service_tier": "auto"},
        {"inference_geo": "us"},
    ],
    ids=["metadata", "context-management", "cache-control", "service-tier", "inference-geo"],
)
def test_hints_are_dropped(hint: dict[str, Any]) -> None:
    assert chat_wire(body(**hint)) == chat_wire(body())


def test_metadata_user_id_becomes_the_prompt_cache_key() -> None:
    assert extra_fields(metadata={"user_id": "user-1"}) == {"prompt_cache_key": "user-1"}
    assert extra_fields(metadata={"user_id": ""}) == {}


def test_a_user_id_longer_than_openai_takes_becomes_a_stable_digest() -> None:
    claude_code = '{"device_id":"' + "0" * 64 + '","session_id":"s-1"}'
    key = extra_fields(metadata={"user_id": claude_code})["prompt_cache_key"]
    assert len(key) <= 64
    assert key == extra_fields(metadata={"user_id": claude_code})["prompt_cache_key"]
    other = claude_code.replace("s-1", "s-2")
    assert key != extra_fields(metadata={"user_id": other})["prompt_cache_key"]


@pytest.mark.parametrize("field", ["container", "mcp_servers", "max_completion_tokens"])
def test_unknown_top_level_field_is_refused(field: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_wire(body(**{field: {}}))
    assert caught.value.message == f"{field}: Extra inputs are not permitted"
    assert caught.value.param == field


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        ({"max_tokens": 1, "messages": [USER]}, "model: Field required"),
        ({"model": "", "max_tokens": 1, "messages": [USER]}, "model: Field required"),
        ({"model": "m", "max_tokens": 1}, "messages: at least one message is required"),
        (
            {"model": "m", "max_tokens": 1, "messages": []},
            "messages: at least one message is required",
        ),
        (
            {"model": "m", "max_tokens": 1, "messages": [{"role": "tool", "content": "x"}]},
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
    ],
    ids=["no-model", "empty-model", "no-messages", "empty-messages", "bad-role"],
)
def test_malformed_body_is_refused(request_body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_wire(request_body)
    assert caught.value.message == message


# Malformed values that escape as a non-ProxyError exception (so a 500, not a 400).
@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"thinking": {"type": "enabled", "budget_tokens": -1}}, id="negative-budget"),
        pytest.param({"thinking": {"type": "enabled", "budget_tokens": 512}}, id="small-budget"),
        pytest.param({"output_config": "high"}, id="output-config-not-object"),
        pytest.param({"system": [{"type": "text", "text": 5}]}, id="system-text-not-string"),
        pytest.param(
            {"messages": [{"role": "assistant", "content": [{"type": "text", "text": 5}]}]},
            id="assistant-text-not-string",
        ),
        pytest.param(
            {"messages": [{"role": "user", "content": ""}]},
            id="empty-user-message",
        ),
    ],
)
def test_malformed_values_are_invalid_request(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        chat_request(body(**fields))


# --- a realistic Claude Code body --------------------------------------------------------------


def test_claude_code_body_is_accepted() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    claude_code = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": True,
        "metadata": {"user_id": '{"device_id":"d","session_id":"s"}'},
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc"},
            {
                "type": "text",
                "text": "You are Claude Code.",
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [{"name": "Bash", "description": "Run a command.", "input_schema": schema}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                    {"type": "text", "text": "ls", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "system", "content": "Plan mode is off."},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "List it.", "signature": "c2ln"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "ls"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "a.py",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ],
    }
    request = chat_request(claude_code)
    wire = request.wire
    assert sorted(wire) == [
        "max_completion_tokens",
        "messages",
        "model",
        "prompt_cache_key",
        "stream",
        "stream_options",
        "tools",
    ]
    assert [m.role for m in request.messages] == ["system", "user", "system", "assistant", "tool"]
    assert wire["messages"][0]["content"] == [  # the billing line left out, breakpoints kept
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}},
    ]
    assert wire["messages"][2] == {"role": "system", "content": "Plan mode is off."}
    assert wire["messages"][3]["tool_calls"][0]["function"]["arguments"] == '{"command":"ls"}'
    assert wire["messages"][4] == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": [{"type": "text", "text": "a.py", "cache_control": {"type": "ephemeral"}}],
    }
    assert request.tools is not None
    assert request.tools[0].function.parameters == schema
    assert request.max_completion_tokens == 32000
    assert request.include_usage is True
