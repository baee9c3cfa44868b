"""The bedrock kind (CONTRACT.md, "Cloud kinds"): a real proxy process in front of the Bedrock
double (tests/helpers/mock_bedrock.py, proven by boto3 in test_bedrock_double.py), which
verifies every SigV4 signature with botocore's signer and screens every Converse body with
botocore's validator and Bedrock's traps. Through the proxy, with the openai, anthropic SDKs:
parallel tool calls and their results, stream and not, on SigV4 (the AWS credential chain from
the environment) and on a Bedrock API key; the Messages and Responses faces; a throttling
exception before and after the first byte; a signature for the wrong region refused with
Bedrock's 403; no credential anywhere in answers or logs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, keyed_config, run_proxy, sdk_client
from tests.helpers.mock_bedrock import (
    API_KEY,
    AWS_ENVIRONMENT,
    CREDENTIALS,
    MockBedrock,
    converse_answer,
    converse_stream,
    converse_stream_frames,
    stream_exception,
    stream_reply,
)
from tests.helpers.openai_stream import assert_openai_stream, parse_sse_body
from tests.helpers.upstream_answers import CALLS

pytestmark = pytest.mark.e2e

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "amazon.nova-pro-v1:0"
PREAMBLE = "Let me check both."
TOOL_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]
TOOLS: Any = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for _, name, _ in CALLS
]
QUESTION: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
SECRETS = (CREDENTIALS.secret_key, CREDENTIALS.token, API_KEY)


@pytest.fixture(scope="module")
def bedrock() -> Iterator[MockBedrock]:
    with MockBedrock() as double:
        yield double


@pytest.fixture(autouse=True)
def _fresh(bedrock: MockBedrock) -> None:
    bedrock.reset()


@pytest.fixture(scope="module")
def proxy(bedrock: MockBedrock, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    base = bedrock.base_url
    config = keyed_config(
        f"""  aws: {{kind: bedrock, region: us-east-1, base_url: "{base}"}}
  awskey: {{kind: bedrock, region: us-east-1, base_url: "{base}", api_key: {API_KEY}}}
  elsewhere: {{kind: bedrock, region: eu-west-1, base_url: "{base}"}}""",
        f"""  - {{name: claude-bedrock, provider: aws, model: "{CLAUDE}", max_tokens: 1024}}
  - {{name: nova, provider: awskey, model: "{NOVA}"}}
  - {{name: wrong-region, provider: elsewhere, model: "{CLAUDE}", max_tokens: 1024}}""",
    )
    directory = tmp_path_factory.mktemp("bedrock")
    with run_proxy(config, directory, env=AWS_ENVIRONMENT) as running:
        yield running
    logged = running.log.read_text()
    for secret in SECRETS:
        assert secret not in logged


def calls_of(message: Any) -> list[tuple[str, str, Any]]:
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]


@pytest.mark.parametrize(
    ("model", "model_id", "auth"), [("claude-bedrock", CLAUDE, "sigv4"), ("nova", NOVA, "bearer")]
)
def test_parallel_tool_calls_non_stream(
    proxy: RunningProxy, bedrock: MockBedrock, model: str, model_id: str, auth: str
) -> None:
    bedrock.add_converse(model_id, converse_answer(PREAMBLE, TOOL_CALLS))
    with sdk_client(proxy) as client:
        answer = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS)
    message = answer.choices[0].message
    assert (message.content, calls_of(message)) == (PREAMBLE, TOOL_CALLS)
    assert answer.choices[0].finish_reason == "tool_calls"
    [call] = bedrock.calls
    assert (call.model_id, call.operation, call.auth) == (model_id, "converse", auth)
    assert "%3A" in call.exchange.path
    assert answer.usage is not None


@pytest.mark.parametrize("model", ["claude-bedrock", "nova"])
def test_a_streamed_answer_keeps_every_guarantee(
    proxy: RunningProxy, bedrock: MockBedrock, model: str
) -> None:
    model_id = CLAUDE if model == "claude-bedrock" else NOVA
    bedrock.add_stream(model_id, converse_stream(PREAMBLE, TOOL_CALLS))
    body = {"model": model, "messages": QUESTION, "tools": TOOLS, "stream": True}
    body["stream_options"] = {"include_usage": True}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    answer = httpx.post(
        f"{proxy.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert answer.status_code == 200, answer.text
    chunks, done = parse_sse_body(answer.content)
    assert_openai_stream(chunks, include_usage=True, done=done)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == PREAMBLE
    bedrock.add_stream(model_id, converse_stream(PREAMBLE, TOOL_CALLS))
    with (
        sdk_client(proxy) as client,
        client.chat.completions.stream(model=model, messages=QUESTION, tools=TOOLS) as stream,
    ):
        final = stream.get_final_completion()
    assert calls_of(final.choices[0].message) == TOOL_CALLS
    assert [call.operation for call in bedrock.calls] == ["converse-stream"] * 2


def test_tool_results_go_back_in_one_user_turn(proxy: RunningProxy, bedrock: MockBedrock) -> None:
    """The double refuses results split over turns (LiteLLM #5277): a 200 proves one turn."""
    bedrock.add_converse(CLAUDE, converse_answer(PREAMBLE, TOOL_CALLS))
    bedrock.add_converse(CLAUDE, converse_answer("Sunny, and 9:30."))
    with sdk_client(proxy) as client:
        first = client.chat.completions.create(
            model="claude-bedrock", messages=QUESTION, tools=TOOLS
        )
        messages = [*QUESTION, first.choices[0].message.model_dump(exclude_none=True)]
        messages += [
            {"role": "tool", "tool_call_id": call_id, "content": f"result {n}"}
            for n, (call_id, _, _) in enumerate(TOOL_CALLS)
        ]
        second = client.chat.completions.create(
            model="claude-bedrock", messages=messages, tools=TOOLS
        )
    assert second.choices[0].message.content == "Sunny, and 9:30."
    sent = bedrock.calls[-1].exchange.body["messages"]
    assert [turn["role"] for turn in sent] == ["user", "assistant", "user"]
    results = [
        block["toolResult"]["toolUseId"] for block in sent[2]["content"] if "toolResult" in block
    ]
    assert results == [call_id for call_id, _, _ in TOOL_CALLS]


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_the_messages_and_responses_faces_on_bedrock(
    proxy: RunningProxy, bedrock: MockBedrock, stream: bool
) -> None:
    add = bedrock.add_stream if stream else bedrock.add_converse
    reply = converse_stream if stream else converse_answer
    add(CLAUDE, reply(PREAMBLE, TOOL_CALLS))
    add(CLAUDE, reply(PREAMBLE, TOOL_CALLS))
    sdk = anthropic.Anthropic(base_url=f"http://127.0.0.1:{proxy.port}", api_key=CLIENT_KEY)
    tools: Any = [{"name": n, "input_schema": {"type": "object"}} for _, n, _ in CALLS]
    fields: Any = {
        "model": "claude-bedrock",
        "max_tokens": 256,
        "messages": QUESTION,
        "tools": tools,
    }
    with sdk:
        if stream:
            with sdk.messages.stream(**fields) as events:
                message = events.get_final_message()
        else:
            message = sdk.messages.create(**fields)
    uses = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert uses == TOOL_CALLS
    response_tools: Any = [
        {"type": "function", "name": n, "parameters": {"type": "object"}} for _, n, _ in CALLS
    ]
    with sdk_client(proxy) as client:
        if stream:
            with client.responses.stream(
                model="claude-bedrock", input="Both?", tools=response_tools
            ) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(
                model="claude-bedrock", input="Both?", tools=response_tools
            )
    called = [(item.call_id, item.name) for item in response.output if item.type == "function_call"]
    assert called == [(call_id, name) for call_id, name, _ in TOOL_CALLS]


def test_throttling_before_the_first_byte_is_a_429(
    proxy: RunningProxy, bedrock: MockBedrock
) -> None:
    bedrock.add_stream(CLAUDE, stream_reply([stream_exception("throttlingException")]))
    with sdk_client(proxy) as client, pytest.raises(openai.RateLimitError):
        list(client.chat.completions.create(model="claude-bedrock", messages=QUESTION, stream=True))


def test_throttling_after_the_first_byte_is_the_error_event(
    proxy: RunningProxy, bedrock: MockBedrock
) -> None:
    frames = converse_stream_frames("Let me check the weather and the time for you.")
    # Later than the text, so the text has gone out when the exception comes.
    late = dataclasses.replace(stream_exception("throttlingException"), delay=0.3)
    bedrock.add_stream(CLAUDE, stream_reply([*frames[:3], late]))
    body = {"model": "claude-bedrock", "messages": QUESTION, "stream": True}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    answer = httpx.post(
        f"{proxy.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert answer.status_code == 200
    last = json.loads(answer.text.strip().split("\n\n")[-1].removeprefix("data: "))
    assert "error" in last
    assert "[DONE]" not in answer.text


def test_a_signature_for_the_wrong_region_is_upstream_auth_failed(proxy: RunningProxy) -> None:
    """Bedrock's 403 refuses ToolRelay's own credentials: a 502 naming the AWS chain."""
    with sdk_client(proxy) as client, pytest.raises(openai.InternalServerError) as refused:
        client.chat.completions.create(model="wrong-region", messages=QUESTION)
    assert refused.value.code == "upstream_auth_failed"
    assert "AWS credential chain" in refused.value.message
    for secret in SECRETS:
        assert secret not in str(refused.value)
