"""OpenAI requests -> Gemini generateContent requests beyond the transcripts: what is refused
(naming the param), what is accepted and not sent, URL and headers, and the history rules
(roles merged, results in call order, signatures restored, parts of every kind). Every body
built here must also pass Gemini's own rules (tests/helpers/gemini_rules.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators.base import Target, UpstreamRequest
from app.translators.gemini.ids import call_id
from app.translators.gemini.request import build_request
from tests.helpers.gemini_rules import request_problems

PROVIDER = ProviderConfig(kind="gemini", base_url="http://gemini.test/", api_key="AIza-test")
TARGET = Target("gemini", "gm", PROVIDER, "gemini-2.5-flash")
HELLO = {"role": "user", "content": "hi"}
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {}}}},
}
SIGNATURE = "EtoCCtcCAdHtim9/abc+def=="


def send(target: Target = TARGET, **fields: Any) -> UpstreamRequest:
    wire = {"model": "gemini", "messages": [HELLO], **fields}
    return build_request(parse_chat_request(orjson.dumps(wire)), target)


def body(**fields: Any) -> dict[str, Any]:
    upstream_body: dict[str, Any] = orjson.loads(send(**fields).body)
    assert request_problems(upstream_body, {("f", "{}"): SIGNATURE}) == []
    return upstream_body


def refusal(**fields: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        send(**fields)
    assert caught.value.status == 400
    return caught.value


def call(call_ref: str, arguments: str = "{}", name: str = "f") -> dict[str, Any]:
    return {"id": call_ref, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls: dict[str, Any], content: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def result(call_ref: str, content: Any = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_ref, "content": content}


# --- refused fields -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n", 2),
        ("logprobs", True),
        ("top_logprobs", 2),
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
def test_fields_gemini_cannot_honour_are_refused_by_name(field: str, value: Any) -> None:
    error = refusal(**{field: value})
    assert error.param == field
    assert f"'{field}'" in error.message
    assert "gemini" in error.message


def test_parallel_tool_calls_false_is_accepted_and_honoured_on_the_answer() -> None:
    """Gemini has no such switch: nothing is sent for it (the response side keeps one call)."""
    sent = body(tools=[TOOL], parallel_tool_calls=False)
    assert "parallel" not in orjson.dumps(sent).decode().lower()


@pytest.mark.parametrize(
    "fields",
    [
        {"n": 1, "logprobs": False, "logit_bias": {}, "modalities": ["text"], "functions": []},
        {"parallel_tool_calls": True, "tools": [TOOL]},
        {"store": True, "metadata": {"a": "b"}, "service_tier": "auto", "user": "u-1"},
        {"safety_identifier": "s", "prompt_cache_key": "k", "response_format": {"type": "text"}},
        {"presence_penalty": 0, "frequency_penalty": 0, "seed": None, "verbosity": None},
    ],
)
def test_defaults_and_bookkeeping_fields_are_accepted_and_not_sent(fields: dict[str, Any]) -> None:
    assert "generationConfig" not in body(**fields)


def test_sampling_fields_map_to_generation_config() -> None:
    config = body(
        temperature=0,
        top_p=0.5,
        top_k=40,
        seed=3,
        presence_penalty=0.2,
        frequency_penalty=-0.1,
        max_tokens=9,
        stop="STOP",
    )["generationConfig"]
    assert config == {
        "temperature": 0,
        "topP": 0.5,
        "topK": 40,
        "seed": 3,
        "presencePenalty": 0.2,
        "frequencyPenalty": -0.1,
        "maxOutputTokens": 9,
        "stopSequences": ["STOP"],
    }


def test_more_than_five_stop_sequences_are_refused() -> None:
    assert refusal(stop=["a", "b", "c", "d", "e", "f"]).param == "stop"


def test_the_models_configured_max_tokens_is_the_default_limit() -> None:
    configured = Target("gemini", "gm", PROVIDER, "gemini-2.5-flash", max_tokens=777)
    upstream_body = orjson.loads(send(configured).body)
    assert upstream_body["generationConfig"] == {"maxOutputTokens": 777}
    assert "generationConfig" not in body()  # otherwise Gemini's own default


# Plain JSON Schema, as responseJsonSchema takes it: `$ref`/`$defs` and `additionalProperties`
# go as given, not inlined or dropped as the older responseSchema needed (C.3).
REF_SCHEMA = {
    "type": "object",
    "properties": {"home": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}},
    "required": ["home"],
    "additionalProperties": False,
    "$defs": {"A": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ({"type": "json_object"}, {"responseMimeType": "application/json"}),
        (
            {"type": "json_schema", "json_schema": {"name": "x"}},
            {"responseMimeType": "application/json"},
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer"}}},
            {"responseMimeType": "application/json", "responseJsonSchema": {"type": "integer"}},
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": REF_SCHEMA}},
            {"responseMimeType": "application/json", "responseJsonSchema": REF_SCHEMA},
        ),
    ],
)
def test_response_format(response_format: dict[str, Any], expected: dict[str, Any]) -> None:
    assert body(response_format=response_format)["generationConfig"] == expected


@pytest.mark.parametrize("response_format", [{"type": "xml"}, "json", {"json_schema": {}}])
def test_an_unknown_response_format_is_refused(response_format: Any) -> None:
    assert refusal(response_format=response_format).param == "response_format"


def test_a_schema_that_is_not_an_object_is_refused() -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}
    assert refusal(response_format=response_format).param == "response_format.json_schema.schema"


# --- URL, headers, tools --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "stream", "url"),
    [
        (
            "gemini-2.5-flash",
            False,
            "http://gemini.test/v1beta/models/gemini-2.5-flash:generateContent",
        ),
        (
            "gemini-2.5-flash",
            True,
            "http://gemini.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
        (
            "models/gemini-2.0-flash",
            False,
            "http://gemini.test/v1beta/models/gemini-2.0-flash:generateContent",
        ),
        (
            "tunedModels/my-model-7",
            False,
            "http://gemini.test/v1beta/tunedModels/my-model-7:generateContent",
        ),
    ],
)
def test_url(model: str, stream: bool, url: str) -> None:
    upstream_request = send(Target("gemini", "gm", PROVIDER, model), stream=stream)
    assert upstream_request.url == url
    assert "AIza" not in upstream_request.url  # the key goes in a header, never in the URL


def test_the_key_goes_in_x_goog_api_key_and_configured_headers_win() -> None:
    provider = ProviderConfig(
        kind="gemini",
        api_key="AIza-test",
        headers={"X-Goog-Api-Key": "from-config", "x-goog-user-project": "p1"},
    )
    headers = send(Target("gemini", "gm", provider, "m")).headers
    assert headers == {
        "content-type": "application/json",
        "X-Goog-Api-Key": "from-config",
        "x-goog-user-project": "p1",
    }
    keyless = ProviderConfig(kind="gemini")
    assert "x-goog-api-key" not in send(Target("gemini", "gm", keyless, "m")).headers


def test_a_function_name_gemini_cannot_take_is_refused() -> None:
    tool = {"type": "function", "function": {"name": "1st_tool"}}
    error = refusal(tools=[TOOL, tool])
    assert error.param == "tools[1].function.name"


def test_tool_descriptions_kept_strict_dropped_parameterless_without_parameters() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "now", "description": "The time.", "strict": True},
        },
        {
            "type": "function",
            "function": {"name": "g", "parameters": {"type": "object", "properties": {}}},
        },
    ]
    assert body(tools=tools)["tools"] == [
        {"functionDeclarations": [{"name": "now", "description": "The time."}, {"name": "g"}]}
    ]


def test_a_recursive_tool_schema_is_refused_naming_the_tool() -> None:
    parameters = {"type": "object", "properties": {"next": {"$ref": "#"}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    assert refusal(tools=[tool]).param == "tools[0].function.parameters"


# --- history --------------------------------------------------------------------------------------


def test_leading_system_messages_are_the_instruction_and_later_ones_marked_turns() -> None:
    messages = [
        {"role": "developer", "content": "One."},
        HELLO,
        {
            "role": "system",
            "content": [{"type": "text", "text": "Two."}, {"type": "text", "text": ""}],
        },
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    upstream_body = body(messages=messages)
    assert upstream_body["systemInstruction"] == {"parts": [{"text": "One."}]}
    assert [content["role"] for content in upstream_body["contents"]] == ["user", "model", "user"]
    assert upstream_body["contents"][0]["parts"][-1] == {"text": "<system>Two.</system>"}


def test_consecutive_same_role_messages_merge_and_empty_ones_vanish() -> None:
    messages = [
        HELLO,
        {"role": "assistant", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "b"}],
        },
        {"role": "assistant", "content": None, "refusal": "c"},
    ]
    assert body(messages=messages)["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}, {"text": "again"}]},
        {"role": "model", "parts": [{"text": "a"}, {"text": "b"}, {"text": "c"}]},
    ]


def test_tool_results_answer_their_calls_in_call_order_in_one_user_turn() -> None:
    messages = [
        HELLO,
        assistant(call("c1", '{"x": 1}'), call("c2", "", name="g"), content="Calling."),
        result("c2", [{"type": "text", "text": "[1, "}, {"type": "text", "text": "2]"}]),
        result("c1", '{"answer": 42}'),
        {"role": "user", "content": "and?"},
    ]
    contents = body(messages=messages, tools=[TOOL])["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "Calling."},
            {"functionCall": {"name": "f", "args": {"x": 1}}},
            {"functionCall": {"name": "g", "args": {}}},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "f", "response": {"answer": 42}}},
            {"functionResponse": {"name": "g", "response": {"result": "[1, 2]"}}},
            {"text": "and?"},
        ],
    }


def test_a_signature_in_a_call_id_goes_back_on_its_call_part() -> None:
    signed = call_id("abc123", 0, SIGNATURE)
    messages = [
        HELLO,
        assistant(call(signed), call("call_x", '{"x": 2}')),
        result(signed),
        result("call_x"),
    ]
    model_turn = body(messages=messages, tools=[TOOL])["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == SIGNATURE
    assert "thoughtSignature" not in model_turn["parts"][1]


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [("{not json", "not valid JSON"), ("[1]", "an array"), ('"x"', "a string"), ("3", "a number")],
)
def test_call_arguments_must_be_a_json_object(arguments: str, kind: str) -> None:
    error = refusal(messages=[HELLO, assistant(call("c1", arguments)), result("c1")])
    assert error.param == "messages[1].tool_calls[0].function.arguments"
    assert kind in error.message


def test_a_result_for_an_unknown_call_is_refused() -> None:
    error = refusal(messages=[HELLO, result("nobody")])
    assert error.param == "messages.[1].role"
    assert "must be a response to a preceeding message with 'tool_calls'" in error.message


@pytest.mark.parametrize(
    "opening",
    [
        [assistant(call("c"))],
        [{"role": "assistant", "content": "Let me look."}, assistant(call("c"))],
        [assistant(call("c"), content="Let me look.")],
    ],
)
def test_a_history_opening_with_calls_gets_a_minimal_user_turn_first(
    opening: list[dict[str, Any]],
) -> None:
    """Gemini wants a call turn right after a user turn (C.2): consecutive model turns merge,
    and a neutral user turn goes in front; nothing the client sent is dropped."""
    messages = [{"role": "system", "content": "s"}, *opening, result("c")]
    upstream_body = orjson.loads(send(messages=messages, tools=[TOOL]).body)
    assert request_problems(upstream_body, {}) == []
    contents = upstream_body["contents"]
    assert [content["role"] for content in contents] == ["user", "model", "user"]
    assert contents[0]["parts"] == [{"text": "."}]
    model_parts = contents[1]["parts"]
    assert model_parts[-1]["functionCall"]["name"] == "f"
    assert [part.get("text") for part in model_parts[:-1]] == (
        ["Let me look."] if len(model_parts) == 2 else []
    )


@pytest.mark.parametrize(
    "messages",
    [[{"role": "system", "content": "only"}], [{"role": "user", "content": ""}]],
)
def test_a_request_with_no_content_is_refused(messages: list[dict[str, Any]]) -> None:
    assert refusal(messages=messages).param == "messages"


def test_legacy_function_messages_are_refused() -> None:
    error = refusal(messages=[HELLO, {"role": "function", "name": "f", "content": "x"}])
    assert error.param == "messages[1]"


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (
            {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}},
            {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}},
        ),
        (
            {"type": "image_url", "image_url": {"url": "https://x.test/photo"}},
            {"fileData": {"fileUri": "https://x.test/photo"}},
        ),
        (
            {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
            {"inlineData": {"mimeType": "audio/wav", "data": "UklGR"}},
        ),
        (
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0="}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
        ),
        (
            {"type": "file", "file": {"file_data": "JVBERi0=", "filename": "a.pdf"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
        ),
    ],
)
def test_user_parts(part: dict[str, Any], expected: dict[str, Any]) -> None:
    messages = [{"role": "user", "content": [part]}]
    assert body(messages=messages)["contents"][0]["parts"] == [expected]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": {"url": "ftp://x.test/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}},
        {"type": "input_audio", "input_audio": {"format": "wav"}},
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "file", "file": {"file_data": "AAAA", "filename": "blob"}},
    ],
)
def test_user_parts_gemini_cannot_take_are_refused_naming_the_part(part: dict[str, Any]) -> None:
    error = refusal(messages=[{"role": "user", "content": [{"type": "text", "text": "x"}, part]}])
    assert error.param == "messages[0].content[1]"
