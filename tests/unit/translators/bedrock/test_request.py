"""OpenAI chat requests -> Converse requests: URL, headers, every field, and each trap peers
fell into (issue 30) as its own test. Every body built here is checked against botocore's own
definition of ConverseRequest / ConverseStreamRequest (shapes.py), not only against our code."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators.base import Target, UpstreamRequest
from app.translators.bedrock.request import build_request
from tests.unit.translators.bedrock.shapes import MODEL_ID, request_problems

PROVIDER = ProviderConfig.model_construct(
    kind="bedrock", base_url="http://bedrock.test", api_key=None, headers={}
)
KEYED = ProviderConfig.model_construct(
    kind="bedrock", base_url="http://bedrock.test", api_key="bedrock-key", headers={}
)
# prompt_cache off: whole bodies are compared; breakpoints: test_prompt_cache.py.
TARGET = Target("claude", "aws", PROVIDER, MODEL_ID, prompt_cache="off")
HELLO = {"role": "user", "content": "hi"}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
PNG = "data:image/png;base64,iVBORw0KGgo="


def send(target: Target = TARGET, **fields: Any) -> UpstreamRequest:
    wire = {"model": "claude", "messages": [HELLO], **fields}
    return build_request(parse_chat_request(orjson.dumps(wire)), target)


def body(target: Target = TARGET, **fields: Any) -> dict[str, Any]:
    upstream = send(target, **fields)
    built: dict[str, Any] = orjson.loads(upstream.body)
    assert request_problems(built, stream=upstream.stream) == ""
    return built


def refusal(**fields: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        send(**fields)
    assert caught.value.status == 400
    return caught.value


def call(call_id: str, arguments: str = '{"city":"Paris"}', name: str = "get_weather") -> Any:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls: Any, content: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def result(call_id: str, content: Any = "18C") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# --- URL and headers ---------------------------------------------------------------------------


def test_url_encodes_the_model_id_as_one_segment() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-v1:0"
    upstream = send(Target("claude", "aws", PROVIDER, arn))
    encoded = "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic"
    assert upstream.url == f"http://bedrock.test/model/{encoded}.claude-v1%3A0/converse"
    assert send(stream=True).url.endswith(
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    )


def test_api_key_is_a_bearer_token_and_no_key_leaves_the_request_unsigned() -> None:
    keyed = send(Target("claude", "aws", KEYED, MODEL_ID))
    assert keyed.headers == {
        "content-type": "application/json",
        "authorization": "Bearer bedrock-key",
    }
    assert send().headers == {"content-type": "application/json"}


def test_a_plain_request_is_valid_for_both_operations() -> None:
    assert body() == {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    assert body(stream=True) == body()


# --- fields ------------------------------------------------------------------------------------


def test_inference_config_from_the_client_fields() -> None:
    sent = body(max_completion_tokens=300, max_tokens=9, temperature=0.2, top_p=0.9, stop="END")
    assert sent["inferenceConfig"] == {
        "maxTokens": 300,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END"],
    }


def test_max_tokens_falls_back_to_the_model_setting() -> None:
    target = Target("claude", "aws", PROVIDER, MODEL_ID, max_tokens=777)
    assert body(target)["inferenceConfig"] == {"maxTokens": 777}
    assert "inferenceConfig" not in body()


def test_leading_system_messages_are_the_system_later_ones_marked_turns_blank_ones_out() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "  "}]},
        HELLO,
        {"role": "system", "content": [{"type": "text", "text": "Later rule"}]},
        {"role": "system", "content": " "},
    ]
    sent = body(messages=messages)
    assert sent["system"] == [{"text": "Be brief."}]
    assert sent["messages"] == [
        {"role": "user", "content": [{"text": "hi"}, {"text": "<system>Later rule</system>"}]}
    ]


def test_cache_control_marks_become_cache_points() -> None:
    marked = {"type": "text", "text": "Long rules", "cache_control": {"type": "ephemeral"}}
    hour = {"type": "text", "text": "Doc", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    sent = body(
        messages=[{"role": "system", "content": [marked]}, {"role": "user", "content": [hour]}]
    )
    assert sent["system"] == [{"text": "Long rules"}, {"cachePoint": {"type": "default"}}]
    assert sent["messages"][0]["content"] == [
        {"text": "Doc"},
        {"cachePoint": {"type": "default", "ttl": "1h"}},
    ]


def test_more_than_four_cache_points_are_refused_naming_the_fifth() -> None:
    marked = [
        {"type": "text", "text": f"part {n}", "cache_control": {"type": "ephemeral"}}
        for n in range(6)
    ]
    error = refusal(messages=[{"role": "user", "content": marked}])
    assert error.status == 400
    assert error.param == "messages[0].content[4].cache_control"
    assert "A maximum of 4 blocks with cache_control" in error.message


def test_images_from_data_urls_and_remote_urls_refused_by_name() -> None:
    image = {"type": "image_url", "image_url": {"url": PNG}}
    sent = body(messages=[{"role": "user", "content": [{"type": "text", "text": "see"}, image]}])
    assert sent["messages"][0]["content"][1] == {
        "image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}
    }
    remote = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    error = refusal(messages=[{"role": "user", "content": [remote]}])
    assert error.param == "messages[0].content[0].image_url.url"
    assert "remote URLs" in error.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("seed", 1), ("logprobs", True), ("frequency_penalty", 0.5), ("top_k", 5), ("audio", {})],
)
def test_fields_bedrock_cannot_honour_are_refused_by_name(field: str, value: Any) -> None:
    assert refusal(**{field: value}).param == field


def test_empty_stop_sequence_refused() -> None:
    assert refusal(stop=["ok", ""]).param == "stop"


# --- tools and tool_choice ---------------------------------------------------------------------


def test_tools_and_every_tool_choice() -> None:
    sent = body(tools=[TOOL])
    assert sent["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Weather",
                    "inputSchema": {"json": TOOL["function"]["parameters"]},  # type: ignore[index]
                }
            }
        ]
    }
    choices = {
        "auto": {"auto": {}},
        "required": {"any": {}},
    }
    for choice, converse in choices.items():
        assert body(tools=[TOOL], tool_choice=choice)["toolConfig"]["toolChoice"] == converse
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert body(tools=[TOOL], tool_choice=named)["toolConfig"]["toolChoice"] == {
        "tool": {"name": "get_weather"}
    }


def test_parameterless_tool_gets_an_object_schema() -> None:
    bare = {"type": "function", "function": {"name": "now"}}
    spec = body(tools=[bare])["toolConfig"]["tools"][0]["toolSpec"]
    assert spec == {"name": "now", "inputSchema": {"json": {"type": "object", "properties": {}}}}


# --- reasoning and structured output -----------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "Think: ünïcode kept.", "signature": "c2ln+/="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgB"}


def test_reasoning_effort_becomes_thinking_with_max_tokens_above_the_budget() -> None:
    sent = body(reasoning_effort="medium", max_tokens=1000)
    assert sent["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 4096}
    }
    assert sent["inferenceConfig"]["maxTokens"] == 5096
    assert body(reasoning_effort="low")["inferenceConfig"]["maxTokens"] == 4096
    assert "additionalModelRequestFields" not in body(reasoning_effort="none")


def test_thinking_blocks_replayed_signed_and_first_in_their_turn() -> None:
    calling = {
        **assistant(call("call_1"), content="Checking."),
        "thinking_blocks": [THINKING, REDACTED],
    }
    sent = body(messages=[HELLO, calling, result("call_1")], tools=[TOOL], reasoning_effort="low")
    content = sent["messages"][1]["content"]
    assert content[:3] == [
        {
            "reasoningContent": {
                "reasoningText": {"text": THINKING["thinking"], "signature": "c2ln+/="}
            }
        },
        {"reasoningContent": {"redactedContent": "EmwKAhgB"}},
        {"text": "Checking."},
    ]
    without = body(messages=[HELLO, calling, result("call_1")], tools=[TOOL])
    assert "reasoningContent" not in without["messages"][1]["content"][0]


def test_response_format_json_schema_becomes_output_config() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "count", "description": "A count", "schema": schema},
    }
    sent = body(response_format=response_format)
    json_schema = sent["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert sent["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert orjson.loads(json_schema.pop("schema")) == schema
    assert json_schema == {"name": "count", "description": "A count"}


def test_structured_output_tool_mode_forces_an_answer_tool() -> None:
    target = Target("claude", "aws", PROVIDER, MODEL_ID, structured_output="tool")
    sent = body(target, response_format={"type": "json_object"})
    assert sent["toolConfig"]["toolChoice"] == {"tool": {"name": "json_response"}}
    assert sent["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"] == {"json": {"type": "object"}}
    assert "outputConfig" not in sent


def test_the_shape_check_is_botocores_and_catches_what_bedrock_refuses() -> None:
    """The checker every test above relies on: it refuses a two-key content block, a blank
    system text, an empty tool list and names or ids outside Bedrock's patterns."""
    two_keys = {"text": "a", "cachePoint": {"type": "default"}}
    assert "tagged union" in request_problems(
        {"messages": [{"role": "user", "content": [two_keys]}]}
    )
    bad = {
        "system": [{"text": ""}],
        "messages": [
            {
                "role": "user",
                "content": [{"toolUse": {"toolUseId": "a b", "name": "x.y", "input": {}}}],
            }
        ],
        "toolConfig": {"tools": []},
    }
    problems = request_problems(bad)
    for expected in ("system[0].text", "toolConfig.tools", "tool name 'x.y'", "toolUseId 'a b'"):
        assert expected in problems
