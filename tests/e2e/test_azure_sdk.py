"""The azure kind (CONTRACT.md, "Cloud kinds"): a real proxy process in front of an Azure OpenAI
double (tests/helpers/mock_azure.py), on the deployments API (`api_version`) and the v1 API.
The double is proven first: the openai SDK's own `AzureOpenAI` client, pointed at it directly,
accepts its answers and streams. Then the openai SDK through the proxy sees OpenAI's strict
stream (Azure's filter chunks gone), parallel tool calls, a content-filter refusal as a 400
`content_filter`, embeddings, and the Responses and Messages faces on an Azure model; Azure
gets its key as `api-key`, the deployment where its API wants it, and no key of ours."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.e2e.conftest import (
    CLIENT_KEY,
    SECRETS,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_azure import BLOCKED, TEXT, MockAzure
from tests.helpers.openai_stream import assert_openai_stream, parse_sse_body
from tests.helpers.upstream_answers import CALLS

pytestmark = pytest.mark.e2e

AZURE_KEY = "azure-test-SECRET-654"
API_VERSION = "2024-10-21"
DEPLOYMENT = "my-gpt"
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for _, name, _ in CALLS
]
QUESTION: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
EXPECTED_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]


@pytest.fixture(scope="module")
def azure() -> Iterator[MockAzure]:
    with MockAzure(AZURE_KEY, deployments=(DEPLOYMENT,)) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(azure: MockAzure) -> None:
    azure.reset()


@pytest.fixture(scope="module")
def proxy(azure: MockAzure, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    config = keyed_config(
        f"""  az: {{kind: azure, base_url: "{azure.base_url}", api_key: {AZURE_KEY},
        api_version: "{API_VERSION}"}}
  az1: {{kind: azure, base_url: "{azure.base_url}", api_key: {AZURE_KEY}}}""",
        f"""  - {{name: gpt-azure, provider: az, model: {DEPLOYMENT}, max_tokens: 1024}}
  - {{name: gpt-azure-v1, provider: az1, model: {DEPLOYMENT}, max_tokens: 1024}}
  - {{name: missing, provider: az, model: no-such-deployment}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("azure")) as running:
        yield running


def calls_of(message: Any) -> list[tuple[str, str, Any]]:
    return [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]


# --- the double, checked with the openai SDK's own Azure client ---------------------------------


def test_azure_openai_client_accepts_the_double(azure: MockAzure) -> None:
    client = openai.AzureOpenAI(
        api_key=AZURE_KEY, api_version=API_VERSION, azure_endpoint=azure.base_url, max_retries=0
    )
    with client:
        answer = client.chat.completions.create(model=DEPLOYMENT, messages=QUESTION, tools=TOOLS)
        stream = client.chat.completions.create(
            model=DEPLOYMENT, messages=QUESTION, tools=TOOLS, stream=True
        )
        streamed = [chunk.model_dump() for chunk in stream]
        vectors = client.embeddings.create(model=DEPLOYMENT, input=["a", "bb"])
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model=DEPLOYMENT, messages=[{"role": "user", "content": BLOCKED}]
            )
    assert calls_of(answer.choices[0].message) == EXPECTED_CALLS
    assert answer.model_extra is not None
    assert "prompt_filter_results" in answer.model_extra  # Azure's own shape, as the SDK reads it
    assert streamed[0]["choices"] == []  # the prompt filter's chunk: the SDK yields it as is
    assert [len(v.embedding) for v in vectors.data] == [3, 3]
    assert refused.value.code == "content_filter"
    exchange = azure.exchanges[0]
    assert (
        exchange.path
        == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}"
    )
    assert exchange.headers["api-key"] == AZURE_KEY


# --- the proxy in front of it --------------------------------------------------------------------


@pytest.mark.parametrize("model", ["gpt-azure", "gpt-azure-v1"])
def test_parallel_tool_calls_non_stream(proxy: RunningProxy, azure: MockAzure, model: str) -> None:
    with sdk_client(proxy) as client:
        answer = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS)
    assert calls_of(answer.choices[0].message) == EXPECTED_CALLS
    assert answer.choices[0].finish_reason == "tool_calls"
    assert answer.model == model
    [exchange] = azure.exchanges
    assert exchange.headers["api-key"] == AZURE_KEY
    assert "authorization" not in exchange.headers
    if model == "gpt-azure":
        assert exchange.path == (
            f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}"
        )
    else:
        assert exchange.path == "/openai/v1/chat/completions"
        assert exchange.body["model"] == DEPLOYMENT


@pytest.mark.parametrize("model", ["gpt-azure", "gpt-azure-v1"])
@pytest.mark.parametrize("tools", [True, False], ids=["tools", "text"])
def test_a_stream_is_openais_strict_dialect(proxy: RunningProxy, model: str, tools: bool) -> None:
    """Azure's prompt-filter chunk (no choices, `object: ""`) and its filter-only chunk after
    the finish never reach the client; the usage chunk is the one `choices: []` chunk."""
    body: dict[str, Any] = {"model": model, "messages": QUESTION, "stream": True}
    body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = TOOLS
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    answer = httpx.post(
        f"{proxy.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert answer.status_code == 200, answer.text
    chunks, done = parse_sse_body(answer.content)
    assert_openai_stream(chunks, include_usage=True, done=done)
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert all(choice.get("delta") is not None for c in chunks for choice in c["choices"])
    if tools:
        with (
            sdk_client(proxy) as client,
            client.chat.completions.stream(model=model, messages=QUESTION, tools=TOOLS) as sdk,
        ):
            final = sdk.get_final_completion()
        assert calls_of(final.choices[0].message) == EXPECTED_CALLS
    else:
        text = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
        )
        assert text == TEXT


def test_a_content_filter_refusal_is_a_400_content_filter(proxy: RunningProxy) -> None:
    with sdk_client(proxy) as client, pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="gpt-azure", messages=[{"role": "user", "content": f"say {BLOCKED}"}]
        )
    assert refused.value.code == "content_filter"
    assert "content management policy" in refused.value.message


def test_an_unknown_deployment_is_azures_404(proxy: RunningProxy) -> None:
    with sdk_client(proxy) as client, pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="missing", messages=QUESTION)
    assert "deployment" in missing.value.message.lower()


@pytest.mark.parametrize("model", ["gpt-azure", "gpt-azure-v1"])
def test_embeddings_go_to_the_deployment(proxy: RunningProxy, azure: MockAzure, model: str) -> None:
    with sdk_client(proxy) as client:
        vectors = client.embeddings.create(model=model, input=["one", "three"])
    assert [item.embedding for item in vectors.data] == [[0.5, -0.25, 3.0], [0.5, -0.25, 5.0]]
    [exchange] = azure.exchanges
    suffix = "embeddings" if model == "gpt-azure-v1" else f"embeddings?api-version={API_VERSION}"
    assert exchange.path.endswith(suffix)
    assert exchange.headers["api-key"] == AZURE_KEY


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_the_responses_and_messages_faces_on_azure(proxy: RunningProxy, stream: bool) -> None:
    tools: Any = [
        {"type": "function", "name": n, "parameters": {"type": "object"}} for _, n, _ in CALLS
    ]
    with sdk_client(proxy) as client:
        if stream:
            with client.responses.stream(
                model="gpt-azure", input="Weather and time?", tools=tools
            ) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(
                model="gpt-azure", input="Weather and time?", tools=tools
            )
    assert [
        (item.call_id, item.name) for item in response.output if item.type == "function_call"
    ] == [(call_id, name) for call_id, name, _ in CALLS]
    sdk = anthropic.Anthropic(
        base_url=f"http://127.0.0.1:{proxy.port}", api_key=CLIENT_KEY, max_retries=0
    )
    anthropic_tools: Any = [{"name": n, "input_schema": {"type": "object"}} for _, n, _ in CALLS]
    with sdk:
        fields: Any = {
            "model": "gpt-azure",
            "max_tokens": 256,
            "messages": QUESTION,
            "tools": anthropic_tools,
        }
        if stream:
            with sdk.messages.stream(**fields) as events:
                message = events.get_final_message()
        else:
            message = sdk.messages.create(**fields)
    uses = [
        (block.id, block.name, block.input) for block in message.content if block.type == "tool_use"
    ]
    assert uses == EXPECTED_CALLS
    assert message.stop_reason == "tool_use"


def test_no_key_reaches_the_client(proxy: RunningProxy) -> None:
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    body = {"model": "gpt-azure", "messages": [{"role": "user", "content": BLOCKED}]}
    answer = httpx.post(
        f"{proxy.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert answer.status_code == 400
    for secret in (*SECRETS, AZURE_KEY):
        assert secret not in answer.text
