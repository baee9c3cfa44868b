"""Structured output through a real proxy process, from the SDKs' own helpers: the `openai`
SDK's `chat.completions.parse(response_format=Model)`, `chat.completions.stream(...)` and
`responses.parse(text_format=Model)`, and the `anthropic` SDK's `messages.parse(output_format=
Model)` on the Messages face, against the validating Anthropic mock (`output_config.format`
natively; a forced or, under thinking, offered answer tool with `structured_output: tool`)
and the validating Gemini mock (`responseJsonSchema`), streamed and not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    KindMocks,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_anthropic import MockAnthropic, message, message_events, thinking_block
from tests.helpers.mock_gemini import MockGemini, gemini_answer
from tests.helpers.mock_upstream import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import USAGE

pytestmark = pytest.mark.e2e
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])


class Address(BaseModel):
    city: str
    country: str


class Person(BaseModel):
    name: str
    home: Address


ADA = Person(name="Ada", home=Address(city="London", country="UK"))
ADA_JSON = ADA.model_dump()
ASK: Any = [{"role": "user", "content": "Ada Lovelace lived in London, UK. Who is this?"}]


@pytest.fixture(scope="module")
def proxy(
    kind_mocks: KindMocks,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningProxy]:
    oa, gemini, an = kind_mocks
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini.base_url}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{an.base_url}", api_key: {ANTHROPIC_KEY}}}""",
        """  - {name: gpt, provider: oa, model: gpt-4o-mini}
  - {name: gemini, provider: gm, model: gemini-2.5-flash}
  - {name: claude, provider: an, model: claude-sonnet-4-5}
  - {name: claude-tool, provider: an, model: claude-sonnet-4-5, structured_output: tool}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("structured")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


# --- scripting the upstreams --------------------------------------------------------------------


def script_anthropic(an: MockAnthropic, whole: dict[str, Any], *, stream: bool) -> None:
    an.answer(
        Reply(frames=anthropic_frames(message_events(whole))) if stream else Reply(json=whole)
    )


def text_answer() -> dict[str, Any]:
    return message([{"type": "text", "text": json.dumps(ADA_JSON)}], "end_turn")


def tool_answer(*, thinking: bool = False) -> dict[str, Any]:
    blocks = [thinking_block("Ada, London.")] if thinking else []
    if thinking:  # an offered tool: the model may say something first
        blocks.append({"type": "text", "text": "Here it is:"})
    blocks.append(
        {"type": "tool_use", "id": "toolu_01Ans", "name": "json_response", "input": ADA_JSON}
    )
    return message(blocks, "tool_use")


def script_gemini(gemini: MockGemini, *, stream: bool) -> None:
    text = json.dumps(ADA_JSON)
    if not stream:
        gemini.answer(Reply(json=gemini_answer([{"text": text}])))
        return
    half = len(text) // 2
    frames = [
        Frame(gemini_answer([{"text": text[:half]}], finish=None, usage=None)),
        Frame(gemini_answer([{"text": text[half:]}])),
    ]
    gemini.answer(Reply(frames=frames), stream=True)


def parse_chat(client: openai.OpenAI, model: str, *, stream: bool, **fields: Any) -> Person:
    """The SDK's own parsed model: `parse()`, or `stream()`'s final completion."""
    if not stream:
        completion = client.chat.completions.parse(
            model=model, messages=ASK, response_format=Person, **fields
        )
    else:
        with client.chat.completions.stream(
            model=model, messages=ASK, response_format=Person, **fields
        ) as events:
            completion = events.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert not choice.message.tool_calls
    assert choice.message.parsed is not None
    return choice.message.parsed


def sent_anthropic(an: MockAnthropic) -> dict[str, Any]:
    (exchange,) = an.requests(ANTHROPIC_PATH)
    body: dict[str, Any] = exchange.body
    return body


# --- openai SDK -> anthropic --------------------------------------------------------------------


@STREAMS
def test_chat_parse_on_anthropic_uses_output_config(
    an: MockAnthropic, client: openai.OpenAI, stream: bool
) -> None:
    script_anthropic(an, text_answer(), stream=stream)
    assert parse_chat(client, "claude", stream=stream) == ADA
    sent = sent_anthropic(an)
    output_format = sent["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    assert output_format["schema"]["$defs"]["Address"]["additionalProperties"] is False
    assert "tools" not in sent


@STREAMS
def test_chat_parse_on_anthropic_tool_mode_forces_the_answer_tool(
    an: MockAnthropic, client: openai.OpenAI, stream: bool
) -> None:
    script_anthropic(an, tool_answer(), stream=stream)
    assert parse_chat(client, "claude-tool", stream=stream) == ADA
    sent = sent_anthropic(an)
    assert sent["tool_choice"] == {"type": "tool", "name": "json_response"}
    assert sent["tools"][0]["input_schema"]["required"] == ["name", "home"]
    assert "output_config" not in sent


@STREAMS
def test_chat_parse_on_anthropic_tool_mode_with_thinking_offers_the_tool(
    an: MockAnthropic, client: openai.OpenAI, stream: bool
) -> None:
    """The mock refuses a forced tool with thinking, as Anthropic does (B.7)."""
    script_anthropic(an, tool_answer(thinking=True), stream=stream)
    assert parse_chat(client, "claude-tool", stream=stream, reasoning_effort="low") == ADA
    sent = sent_anthropic(an)
    assert sent["thinking"]["type"] == "enabled"
    assert "tool_choice" not in sent


def test_json_object_on_anthropic(an: MockAnthropic, client: openai.OpenAI) -> None:
    script_anthropic(an, text_answer(), stream=False)
    completion = client.chat.completions.create(
        model="claude", messages=ASK, response_format={"type": "json_object"}
    )
    assert json.loads(completion.choices[0].message.content or "") == ADA_JSON
    schema = sent_anthropic(an)["output_config"]["format"]["schema"]
    assert schema == {"type": "object"}


@pytest.mark.parametrize("model", ["claude", "claude-tool"])
def test_responses_parse_on_anthropic(an: MockAnthropic, client: openai.OpenAI, model: str) -> None:
    script_anthropic(an, tool_answer() if model == "claude-tool" else text_answer(), stream=False)
    parsed = client.responses.parse(model=model, input="Who is this?", text_format=Person)
    assert parsed.output_parsed == ADA


# --- openai SDK -> gemini -----------------------------------------------------------------------


@STREAMS
def test_chat_parse_on_gemini_sends_response_json_schema(
    gemini: MockGemini, client: openai.OpenAI, stream: bool
) -> None:
    script_gemini(gemini, stream=stream)
    assert parse_chat(client, "gemini", stream=stream) == ADA
    (exchange,) = gemini.gemini_requests()
    config = exchange.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["home"] == {"$ref": "#/$defs/Address"}
    assert "responseSchema" not in config


def test_responses_parse_on_gemini(gemini: MockGemini, client: openai.OpenAI) -> None:
    script_gemini(gemini, stream=False)
    parsed = client.responses.parse(model="gemini", input="Who is this?", text_format=Person)
    assert parsed.output_parsed == ADA


# --- anthropic SDK (Messages face) -> openai and gemini ------------------------------------------


@pytest.fixture(scope="module")
def claude_client(proxy: RunningProxy) -> Iterator[anthropic.Anthropic]:
    base_url = f"http://127.0.0.1:{proxy.port}"
    with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        yield sdk


def openai_answer() -> dict[str, Any]:
    reply = {"role": "assistant", "content": json.dumps(ADA_JSON)}
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1727346178,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
        "usage": USAGE,
    }


def openai_stream_answer() -> list[Frame]:
    text = json.dumps(ADA_JSON)
    envelope = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    deltas = [{"role": "assistant", "content": ""}, {"content": text[:9]}, {"content": text[9:]}]
    chunks = [
        envelope | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    chunks.append(envelope | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append(envelope | {"choices": [], "usage": USAGE})
    return openai_frames(chunks)


@STREAMS
@pytest.mark.parametrize("model", ["gpt", "gemini"])
def test_messages_parse_maps_output_config_format(
    oa: MockUpstream,
    gemini: MockGemini,
    claude_client: anthropic.Anthropic,
    model: str,
    stream: bool,
) -> None:
    if model == "gpt":
        oa.add(Reply(frames=openai_stream_answer()) if stream else Reply(json=openai_answer()))
    else:
        script_gemini(gemini, stream=stream)
    if stream:
        with claude_client.messages.stream(
            model=model, max_tokens=1024, messages=ASK, output_format=Person
        ) as events:
            parsed = events.get_final_message().parsed_output
    else:
        parsed = claude_client.messages.parse(
            model=model, max_tokens=1024, messages=ASK, output_format=Person
        ).parsed_output
    assert parsed == ADA
    if model == "gpt":
        (exchange,) = oa.requests(OPENAI_PATH)
        response_format = exchange.body["response_format"]
        assert response_format["type"] == "json_schema"
        assert response_format["json_schema"]["schema"]["required"] == ["name", "home"]
    else:
        (exchange,) = gemini.gemini_requests()
        assert "responseJsonSchema" in exchange.body["generationConfig"]
