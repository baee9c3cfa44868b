"""The vertex kind (CONTRACT.md, "Cloud kinds"): a real proxy process in front of a Vertex AI
double (tests/helpers/mock_vertex.py) and a Google token endpoint double that verifies the
service account's signed JWT (tests/helpers/google_token_server.py). The Vertex double is
proven first with the official clients pointed at it: `anthropic`'s AnthropicVertex and
`google-genai` with `vertexai=True`. Then, through the proxy: Gemini and Claude models with
the openai SDK (parallel calls, stream and not), the Messages face relayed to Claude on Vertex
(and count_tokens), one token fetched for many requests, and a provider whose credentials
cannot be loaded answering 401 by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from google import genai
from google.genai import types as genai_types
from google.oauth2.credentials import Credentials as OAuthCredentials

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, keyed_config, run_proxy, sdk_client
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_anthropic import message_events
from tests.helpers.mock_gemini import gemini_tool_answer, gemini_tool_frames
from tests.helpers.mock_upstream import Reply, anthropic_frames
from tests.helpers.mock_vertex import MockVertex, model_path
from tests.helpers.upstream_answers import CALLS, anthropic_tool_message

pytestmark = pytest.mark.e2e

PROJECT, REGION = "test-project", "us-east5"
GEMINI_MODEL = "gemini-2.5-flash"
CLAUDE_MODEL = "claude-sonnet-4-5@20250929"
SDK_TOKEN = "ya29.sdk-check-token"
TOOLS: Any = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for _, name, _ in CALLS
]
QUESTION: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]
EXPECTED = [(name, json.loads(arguments)) for _, name, arguments in CALLS]


def path(publisher: str, model: str, method: str) -> str:
    return model_path(PROJECT, REGION, publisher, model, method)


@pytest.fixture(scope="module")
def tokens() -> Iterator[GoogleTokenServer]:
    with GoogleTokenServer(ServiceAccount.generate()) as server:
        yield server


@pytest.fixture(scope="module")
def vertex(tokens: GoogleTokenServer) -> Iterator[MockVertex]:
    with MockVertex(lambda token: token in tokens.issued or token == SDK_TOKEN, PROJECT) as mock:
        yield mock


@pytest.fixture(autouse=True)
def _fresh(vertex: MockVertex) -> None:
    vertex.reset()


@pytest.fixture(scope="module")
def proxy(
    vertex: MockVertex, tokens: GoogleTokenServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    directory = tmp_path_factory.mktemp("vertex")
    key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
    config = keyed_config(
        f"""  gcp: {{kind: vertex, project: {PROJECT}, region: {REGION},
        base_url: "{vertex.base_url}", credentials: "{key_file}"}}
  broken: {{kind: vertex, project: {PROJECT}, region: {REGION},
        base_url: "{vertex.base_url}", credentials: "{directory / "missing.json"}"}}""",
        f"""  - {{name: gemini-vertex, provider: gcp, model: {GEMINI_MODEL}}}
  - {{name: claude-vertex, provider: gcp, model: "{CLAUDE_MODEL}", max_tokens: 1024}}
  - {{name: broken, provider: broken, model: {GEMINI_MODEL}}}""",
    )
    with run_proxy(config, directory) as running:
        yield running


def calls_of(message: Any) -> list[tuple[str, Any]]:
    return [
        (call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls
    ]


def queue_answers(vertex: MockVertex, model: str, *, stream: bool) -> None:
    if model == "gemini-vertex":
        method = "streamGenerateContent" if stream else "generateContent"
        reply = Reply(frames=gemini_tool_frames()) if stream else Reply(json=gemini_tool_answer())
        vertex.add(reply, path("google", GEMINI_MODEL, method))
        return
    whole = anthropic_tool_message()
    method = "streamRawPredict" if stream else "rawPredict"
    reply = Reply(frames=anthropic_frames(message_events(whole))) if stream else Reply(json=whole)
    vertex.add(reply, path("anthropic", CLAUDE_MODEL, method))


# --- the double, checked with the official clients ------------------------------------------


def test_anthropic_vertex_accepts_the_double(vertex: MockVertex) -> None:
    queue_answers(vertex, "claude-vertex", stream=False)
    queue_answers(vertex, "claude-vertex", stream=True)
    client = anthropic.AnthropicVertex(
        region=REGION,
        project_id=PROJECT,
        access_token=SDK_TOKEN,
        base_url=f"{vertex.base_url}/v1",
        max_retries=0,
    )
    fields: Any = {"model": CLAUDE_MODEL, "max_tokens": 256, "messages": QUESTION}
    with client:
        message = client.messages.create(**fields)
        with client.messages.stream(**fields) as events:
            streamed = events.get_final_message()
    for answer in (message, streamed):
        assert [(b.name, b.input) for b in answer.content if b.type == "tool_use"] == EXPECTED
    assert len(vertex.exchanges) == 2  # neither refused by the double's screen


def test_google_genai_on_vertex_accepts_the_double(vertex: MockVertex) -> None:
    queue_answers(vertex, "gemini-vertex", stream=False)
    queue_answers(vertex, "gemini-vertex", stream=True)
    client = genai.Client(
        vertexai=True,
        project=PROJECT,
        location=REGION,
        credentials=OAuthCredentials(token=SDK_TOKEN),  # type: ignore[no-untyped-call]
        http_options=genai_types.HttpOptions(base_url=vertex.base_url, api_version="v1"),
    )
    answer = client.models.generate_content(model=GEMINI_MODEL, contents="Weather and time?")
    chunks = list(client.models.generate_content_stream(model=GEMINI_MODEL, contents="Again?"))
    assert [(call.name, call.args) for call in answer.function_calls or []] == EXPECTED
    streamed = [call for chunk in chunks for call in chunk.function_calls or []]
    assert [(call.name, call.args) for call in streamed] == EXPECTED


# --- the proxy in front of it ----------------------------------------------------------------


@pytest.mark.parametrize("model", ["gemini-vertex", "claude-vertex"])
@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_parallel_tool_calls_through_vertex(
    proxy: RunningProxy, vertex: MockVertex, tokens: GoogleTokenServer, model: str, stream: bool
) -> None:
    queue_answers(vertex, model, stream=stream)
    with sdk_client(proxy) as client:
        if stream:
            with client.chat.completions.stream(model=model, messages=QUESTION, tools=TOOLS) as s:
                answer = s.get_final_completion()
        else:
            answer = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS)
    assert calls_of(answer.choices[0].message) == EXPECTED
    assert answer.choices[0].finish_reason == "tool_calls"
    [exchange] = vertex.exchanges
    assert exchange.headers["authorization"].removeprefix("Bearer ") in tokens.issued
    assert "x-goog-api-key" not in exchange.headers
    if model == "claude-vertex":
        assert exchange.body["anthropic_version"] == "vertex-2023-10-16"
        assert "model" not in exchange.body
        assert "x-api-key" not in exchange.headers


def test_one_token_serves_many_requests(
    proxy: RunningProxy, vertex: MockVertex, tokens: GoogleTokenServer
) -> None:
    before = tokens.requests
    for _ in range(3):
        queue_answers(vertex, "gemini-vertex", stream=False)
        with sdk_client(proxy) as client:
            client.chat.completions.create(model="gemini-vertex", messages=QUESTION, tools=TOOLS)
    assert tokens.requests - before <= 1  # at most the first request of the module fetched one
    assert len(tokens.issued) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_the_messages_face_relays_to_claude_on_vertex(
    proxy: RunningProxy, vertex: MockVertex, stream: bool
) -> None:
    queue_answers(vertex, "claude-vertex", stream=stream)
    sdk = anthropic.Anthropic(base_url=f"http://127.0.0.1:{proxy.port}", api_key=CLIENT_KEY)
    tools: Any = [{"name": n, "input_schema": {"type": "object"}} for _, n, _ in CALLS]
    fields: Any = {"model": "claude-vertex", "max_tokens": 300, "messages": QUESTION}
    with sdk:
        if stream:
            with sdk.messages.stream(**fields, tools=tools) as events:
                message = events.get_final_message()
        else:
            message = sdk.messages.create(**fields, tools=tools)
    assert [(b.name, b.input) for b in message.content if b.type == "tool_use"] == EXPECTED
    [exchange] = vertex.exchanges
    assert exchange.body["max_tokens"] == 300  # the client's own body, relayed
    assert exchange.body["tools"] == tools
    assert "model" not in exchange.body


def test_credentials_that_cannot_load_answer_401_naming_the_provider(proxy: RunningProxy) -> None:
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    body = {"model": "broken", "messages": QUESTION}
    answer = httpx.post(
        f"{proxy.base_url}/chat/completions", json=body, headers=headers, timeout=30
    )
    assert answer.status_code == 401, answer.text
    assert "'broken'" in answer.json()["error"]["message"]
    assert "missing.json" not in answer.text
    assert proxy.log.read_text().count("'broken' has no usable credentials: ") == 1


def test_count_tokens_asks_vertexs_counting_model(proxy: RunningProxy, vertex: MockVertex) -> None:
    counting = model_path(PROJECT, REGION, "anthropic", "count-tokens", "rawPredict")
    vertex.add(Reply(json={"input_tokens": 17}), counting)
    sdk = anthropic.Anthropic(base_url=f"http://127.0.0.1:{proxy.port}", api_key=CLIENT_KEY)
    with sdk:
        counted = sdk.messages.count_tokens(model="claude-vertex", messages=QUESTION)
    assert counted.input_tokens == 17
    [exchange] = vertex.exchanges
    assert exchange.body["model"] == CLAUDE_MODEL
    assert exchange.body["messages"] == QUESTION
