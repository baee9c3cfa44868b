"""Responses API request -> chat request (app/faces/responses/request.py `translate`): items
merged into chat turns, tools bridged, tool_choice, generation settings, and what is dropped
or refused by name (CONTRACT.md, "OpenAI Responses API")."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidRequest
from app.faces.responses.request import translate
from app.faces.responses.tools import CUSTOM_PARAMETERS, ToolOrigin

WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": True,
}


def wire(**body: Any) -> dict[str, Any]:
    history = body.pop("history", [])
    return translate({"model": "m", **body}, history).wire


def refused(param: str | None = None, **body: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        wire(**body)
    if param is not None:
        assert caught.value.param == param, str(caught.value)
    return caught.value


def call(
    call_id: str, name: str = "weather", arguments: str = '{"city":"Paris"}'
) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str, text: Any = "sunny") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


# -- items -> messages ---------------------------------------------------------------------


def test_a_string_input_is_one_user_message_after_the_instructions() -> None:
    assert wire(instructions="Be brief.", input="hi")["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


def test_calls_merge_into_the_assistant_turn_with_the_text_before_them() -> None:
    items = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me check."}],
        },
        call("c1"),
        call("c2", arguments='{"city":"Rome"}'),
        output("c1", "sunny"),
        output("c2", "rain"),
    ]
    messages = wire(input=items)["messages"]
    assert messages == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
    ]


def test_outputs_keep_their_own_call_ids_in_the_order_given() -> None:
    items = [
        {"role": "user", "content": "go"},
        call("a"),
        call("b"),
        output("b", "B"),
        output("a", "A"),
    ]
    tools = [m for m in wire(input=items)["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [("b", "B"), ("a", "A")]


def test_text_after_calls_starts_a_new_assistant_turn() -> None:
    items = [
        {"role": "user", "content": "go"},
        call("c1"),
        output("c1"),
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "thanks"},
    ]
    roles = [m["role"] for m in wire(input=items)["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert wire(input=items)["messages"][3] == {"role": "assistant", "content": "It is sunny."}


def test_developer_and_system_roles_are_kept() -> None:
    items = [
        {"role": "developer", "content": [{"type": "input_text", "text": "dev rules"}]},
        {"role": "system", "content": "sys rules"},
        {"role": "user", "content": "hi"},
    ]
    assert wire(input=items)["messages"] == [
        {"role": "developer", "content": "dev rules"},
        {"role": "system", "content": "sys rules"},
        {"role": "user", "content": "hi"},
    ]


def test_image_and_file_parts_become_chat_parts() -> None:
    content = [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "https://x.test/cat.png", "detail": "low"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,AAAA",
            "filename": "a.pdf",
        },
        {"type": "input_file", "file_id": "file-123"},
    ]
    (message,) = wire(input=[{"role": "user", "content": content}])["messages"]
    assert message["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.png", "detail": "low"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,AAAA", "filename": "a.pdf"},
        },
        {"type": "file", "file": {"file_id": "file-123"}},
    ]


def test_a_tool_output_given_as_parts_is_its_text_and_its_images_follow_as_a_user_turn() -> None:
    parts = [
        {"type": "input_text", "text": "line one"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_text", "text": "line two"},
    ]
    items = [
        {"role": "user", "content": "shot"},
        call("c1", "screenshot", "{}"),
        output("c1", parts),
    ]
    messages = wire(input=items)["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "line one\nline two"}
    assert messages[3] == {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
    }


def test_history_comes_before_the_input() -> None:
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "one"}],
        },
    ]
    messages = wire(input="second", history=history)["messages"]
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
    ]


def test_output_items_sent_back_as_they_came_are_accepted() -> None:
    items = [
        {"role": "user", "content": "go"},
        {**call("c1"), "id": "fc_1", "status": "completed", "namespace": None},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": "ok",
            "id": "fco_1",
            "status": "completed",
        },
    ]
    messages = wire(input=items)["messages"]
    assert messages[1]["tool_calls"][0]["function"]["name"] == "weather"


def test_custom_tool_calls_go_up_as_functions_with_input() -> None:
    items = [
        {"role": "user", "content": "patch"},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
    ]
    messages = wire(input=items)["messages"]
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "apply",
        "arguments": '{"input":"*** Begin Patch"}',
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "done"}


def test_a_namespaced_call_goes_up_flattened() -> None:
    items = [{"role": "user", "content": "go"}, {**call("c1", "list"), "namespace": "files"}]
    items.append(output("c1"))
    messages = wire(input=items)["messages"]
    assert messages[1]["tool_calls"][0]["function"]["name"] == "files__list"


def test_a_function_call_output_without_call_id_is_a_400_naming_it() -> None:
    items = [{"role": "user", "content": "go"}, {"type": "function_call_output", "output": "x"}]
    error = refused("input.1.call_id", input=items)
    assert "input.1.call_id" in str(error)


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "message", "role": "robot", "content": "x"}, "input.0.role"),
        ({"type": "function_call", "name": "weather", "arguments": "{}"}, "input.0"),
        ({"type": "function_call", "call_id": "c", "name": "w", "arguments": {"a": 1}}, "input.0"),
        ({"type": "web_search_call", "id": "ws_1"}, "input.0"),
        ({"type": "item_reference", "id": "msg_unknown"}, "input.0"),
        ("just a string", "input.0"),
        ({"role": "user", "content": [{"type": "input_image"}]}, "input.0.content.0"),
        ({"role": "user", "content": 5}, "input.0.content"),
    ],
)
def test_malformed_items_are_400s_naming_the_item(item: Any, param: str) -> None:
    refused(param, input=[item])


def test_no_input_at_all_is_a_400() -> None:
    refused("input", instructions="only instructions")
    refused("input", input=[])
    refused("input", input=5)


# -- tools -----------------------------------------------------------------------------------


def test_function_tools_go_up_as_chat_functions() -> None:
    assert wire(input="hi", tools=[WEATHER])["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "parameters": WEATHER["parameters"],
                "strict": True,
                "description": "The weather in a city.",
            },
        }
    ]


def test_a_custom_tool_becomes_a_function_taking_input() -> None:
    custom = {
        "type": "custom",
        "name": "apply_patch",
        "description": "Apply a patch.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
    }
    translation = translate({"model": "m", "input": "hi", "tools": [custom]}, [])
    (tool,) = translation.wire["tools"]
    function = tool["function"]
    assert function["name"] == "apply_patch"
    assert function["parameters"] == CUSTOM_PARAMETERS
    assert function["parameters"]["required"] == ["input"]
    assert function["description"].startswith("Apply a patch.")
    assert "lark" in function["description"]
    assert "start: /.+/" in function["description"]
    assert translation.tools.origin("apply_patch") == ToolOrigin("custom", "apply_patch")


def test_a_namespace_is_flattened_and_mapped_back() -> None:
    namespace = {
        "type": "namespace",
        "name": "files",
        "tools": [{**WEATHER, "name": "read"}, {"type": "custom", "name": "write"}],
    }
    translation = translate({"model": "m", "input": "hi", "tools": [namespace]}, [])
    names = [tool["function"]["name"] for tool in translation.wire["tools"]]
    assert names == ["files__read", "files__write"]
    assert translation.tools.origin("files__read") == ToolOrigin("function", "read", "files")
    assert translation.tools.origin("files__write") == ToolOrigin("custom", "write", "files")
    assert translation.tools.origin("other") == ToolOrigin("function", "other")


def test_hosted_tools_are_left_out_and_named_in_the_warning() -> None:
    tools = [WEATHER, {"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs"]}]
    translation = translate({"model": "m", "input": "hi", "tools": tools}, [])
    assert [tool["function"]["name"] for tool in translation.wire["tools"]] == ["weather"]
    assert translation.warning is not None
    assert "web_search" in translation.warning
    assert "file_search" in translation.warning


def test_no_hosted_tools_no_warning() -> None:
    assert translate({"model": "m", "input": "hi", "tools": [WEATHER]}, []).warning is None


def test_only_hosted_tools_send_no_tools_and_no_choice() -> None:
    sent = wire(input="hi", tools=[{"type": "web_search"}], tool_choice="required")
    assert "tools" not in sent
    assert "tool_choice" not in sent


@pytest.mark.parametrize(
    ("tools", "param"),
    [
        ("weather", "tools"),
        ([{"name": "x"}], "tools.0"),
        ([{"type": "function"}], "tools.0.name"),
        ([{"type": "namespace", "name": "ns", "tools": "x"}], "tools.0"),
        ([{"type": "namespace", "tools": []}], "tools.0.name"),
    ],
)
def test_malformed_tools_are_400s(tools: Any, param: str) -> None:
    refused(param, input="hi", tools=tools)


# -- tool_choice ------------------------------------------------------------------------------


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_plain_tool_choices_pass(choice: str) -> None:
    assert wire(input="hi", tools=[WEATHER], tool_choice=choice)["tool_choice"] == choice


def test_a_forced_function_and_a_forced_namespaced_one() -> None:
    sent = wire(input="hi", tools=[WEATHER], tool_choice={"type": "function", "name": "weather"})
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    namespace = {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "f"}]}
    choice = {"type": "function", "name": "f", "namespace": "ns"}
    sent = wire(input="hi", tools=[namespace], tool_choice=choice)
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "ns__f"}}


def test_a_forced_custom_tool_forces_its_function() -> None:
    choice = {"type": "custom", "name": "apply"}
    sent = wire(input="hi", tools=[{"type": "custom", "name": "apply"}], tool_choice=choice)
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "apply"}}


def test_forcing_a_tool_not_offered_is_a_400() -> None:
    refused(
        "tool_choice", input="hi", tools=[WEATHER], tool_choice={"type": "function", "name": "x"}
    )


def test_allowed_tools_narrow_the_offer() -> None:
    tools = [WEATHER, {**WEATHER, "name": "time"}, {**WEATHER, "name": "news"}]
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "time"}, {"type": "function", "name": "news"}],
    }
    sent = wire(input="hi", tools=tools, tool_choice=choice)
    assert sent["tool_choice"] == "required"
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["time", "news"]


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "allowed_tools", "mode": "none", "tools": []},
        {"type": "allowed_tools", "mode": "auto"},
    ],
)
def test_malformed_allowed_tools_are_400s(choice: Any) -> None:
    refused("tool_choice", input="hi", tools=[WEATHER], tool_choice=choice)


@pytest.mark.parametrize(
    "choice", [{"type": "web_search"}, {"type": "file_search"}, {"type": "image_generation"}]
)
def test_forcing_a_hosted_tool_is_a_400_naming_it(choice: dict[str, str]) -> None:
    error = refused("tool_choice", input="hi", tools=[WEATHER, choice], tool_choice=choice)
    assert choice["type"] in str(error)


# -- generation settings -----------------------------------------------------------------------


def test_text_format_json_schema_nests_into_response_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    text = {"format": {"type": "json_schema", "name": "out", "schema": schema, "strict": True}}
    assert wire(input="hi", text=text)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": schema, "strict": True},
    }
    assert wire(input="hi", text={"format": {"type": "json_object"}})["response_format"] == {
        "type": "json_object"
    }
    assert "response_format" not in wire(input="hi", text={"format": {"type": "text"}})
    assert "response_format" not in wire(input="hi", text={"verbosity": "low"})


def test_an_unknown_text_format_is_a_400() -> None:
    refused("text.format", input="hi", text={"format": {"type": "yaml"}})
    refused("text.format", input="hi", text={"format": "json"})


@pytest.mark.parametrize(("effort", "sent"), [("low", "low"), ("high", "high"), ("xhigh", "high")])
def test_reasoning_effort(effort: str, sent: str) -> None:
    body = wire(input="hi", reasoning={"effort": effort, "summary": "auto"})
    assert body["reasoning_effort"] == sent


def test_reasoning_not_an_object_is_a_400() -> None:
    refused("reasoning", input="hi", reasoning="high")


def test_max_output_tokens_and_sampling() -> None:
    body = wire(
        input="hi", max_output_tokens=99, temperature=0.5, top_p=0.9, parallel_tool_calls=False
    )
    assert body["max_completion_tokens"] == 99
    assert (body["temperature"], body["top_p"], body["parallel_tool_calls"]) == (0.5, 0.9, False)


def test_stream_asks_for_usage() -> None:
    body = wire(input="hi", stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_the_cache_key_and_end_user_ids_go_on_as_chats_own() -> None:
    ids = {"prompt_cache_key": "k", "safety_identifier": "s", "user": "u"}
    body = wire(input="hi", **ids)
    assert {name: body[name] for name in ids} == ids
    assert "prompt_cache_key" not in wire(input="hi", prompt_cache_key="")


def test_hints_are_dropped_not_refused() -> None:
    hints = {
        "prompt_cache_retention": "24h",
        "service_tier": "auto",
        "truncation": "auto",
        "include": ["reasoning.encrypted_content"],
        "metadata": {"a": "b"},
        "stream_options": {"include_obfuscation": False},
        "store": False,
    }
    body = wire(input="hi", **hints)
    assert set(body) == {"model", "messages"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("background", True), ("conversation", "conv_1"), ("conversation", {"id": "conv_1"})],
)
def test_refused_fields_are_400s_naming_them(field: str, value: Any) -> None:
    error = refused(field, input="hi", **{field: value})
    assert field in str(error)


def test_background_false_and_nulls_are_fine() -> None:
    assert wire(input="hi", background=False, conversation=None)["messages"]


def test_an_unknown_field_is_a_400_naming_it() -> None:
    error = refused("frobnicate", input="hi", frobnicate=1)
    assert "frobnicate" in str(error)


def test_model_is_required() -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate({"input": "hi"}, [])
    assert caught.value.param == "model"


@pytest.mark.parametrize("value", [0, -1, 1.5, "16", True])
def test_max_output_tokens_that_is_not_a_positive_integer_is_refused(value: Any) -> None:
    refused("max_output_tokens", input="hi", max_output_tokens=value)


def test_max_output_tokens_becomes_the_chat_cap() -> None:
    assert wire(input="hi", max_output_tokens=5)["max_completion_tokens"] == 5


@pytest.mark.parametrize("before", [[], [{"role": "user", "content": "and?"}]])
def test_a_call_without_its_output_is_refused_in_the_responses_terms(before: list[Any]) -> None:
    items = [{"role": "user", "content": "go"}, call("call_abc", "list"), *before]
    error = refused("input.1", input=items)
    assert str(error) == "No tool output found for function call call_abc."


def test_an_output_answering_no_call_is_refused_in_the_responses_terms() -> None:
    items = [{"role": "user", "content": "go"}, call("call_abc", "list")]
    items += [{"type": "function_call_output", "call_id": "call_abc", "output": "x"}]
    items += [{"type": "function_call_output", "call_id": "call_zzz", "output": "y"}]
    error = refused("input.3", input=items)
    assert str(error) == "No tool call found for function call output with call_id call_zzz."
