"""Routing on the cloud kinds (CONTRACT.md, "Cloud kinds": "routing, limits"), through a real
proxy process in front of the Bedrock, Vertex AI and Azure doubles and an Anthropic mock:

- fallbacks across kinds: Claude on Bedrock throttled falls back to Anthropic's API, Claude on
  Vertex overloaded falls back to Bedrock, stream and not, the client getting the fallback's
  calls exactly and `x-toolrelay-model` naming it;
- quality routing: a call from Azure that fails its tool's schema sends the request on to
  Bedrock under `on_invalid: fallback`;
- limits: a per-model `rpm` holds on a Bedrock model, and its usage (from Converse's
  `usage`) is what the token metrics count;
- `python -m app eval` runs its suite through Bedrock, Vertex and Azure models."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    REPO,
    RunningProxy,
    proxy_environment,
    run_proxy,
    sdk_client,
)
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_anthropic import MockAnthropic, anthropic_error, message_events
from tests.helpers.mock_azure import MockAzure
from tests.helpers.mock_bedrock import (
    API_KEY,
    MockBedrock,
    bedrock_error,
    converse_answer,
    converse_stream,
    stream_exception,
    stream_reply,
)
from tests.helpers.mock_upstream import ANTHROPIC_PATH, Exchange, Reply, anthropic_frames
from tests.helpers.mock_vertex import MockVertex, model_path
from tests.helpers.upstream_answers import CALLS, TOOLS, anthropic_tool_message

pytestmark = pytest.mark.e2e

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
PROJECT, REGION = "test-project", "us-east5"
AZURE_KEY = "azure-key-TEST-SECRET"
EXPECTED = [(name, json.loads(arguments)) for _, name, arguments in CALLS]
BEDROCK_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]
QUESTION: Any = [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}]


@dataclass(frozen=True)
class Clouds:
    bedrock: MockBedrock
    vertex: MockVertex
    anthropic: MockAnthropic
    azure: MockAzure
    tokens: GoogleTokenServer


def config(clouds: Clouds, key_file: Path) -> str:
    """Every cloud kind, with fallbacks across kinds and a limited model."""
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
  limits:
    bedrock-limited: {{rpm: 1}}
router:
  retries: 0
providers:
  aws: {{kind: bedrock, region: us-east-1, base_url: "{clouds.bedrock.base_url}",
        api_key: "{API_KEY}"}}
  gcp: {{kind: vertex, project: {PROJECT}, region: {REGION},
        base_url: "{clouds.vertex.base_url}", credentials: "{key_file}"}}
  an: {{kind: anthropic, base_url: "{clouds.anthropic.base_url}", api_key: {ANTHROPIC_KEY}}}
  az: {{kind: azure, base_url: "{clouds.azure.base_url}", api_key: {AZURE_KEY},
        api_version: "2024-10-21"}}
models:
  - {{name: claude-bedrock, provider: aws, model: "{BEDROCK_MODEL}", max_tokens: 1024,
      fallbacks: [claude-anthropic]}}
  - {{name: claude-anthropic, provider: an, model: claude-sonnet-4-5, max_tokens: 1024}}
  - {{name: claude-vertex, provider: gcp, model: "{VERTEX_MODEL}", max_tokens: 1024,
      fallbacks: [claude-bedrock]}}
  - {{name: gpt-azure, provider: az, model: my-gpt, fallbacks: [claude-bedrock],
      tool_calls: {{on_invalid: fallback}}}}
  - {{name: bedrock-limited, provider: aws, model: "{BEDROCK_MODEL}", max_tokens: 1024}}
"""


@pytest.fixture(scope="module")
def clouds() -> Iterator[Clouds]:
    with (
        GoogleTokenServer(ServiceAccount.generate()) as tokens,
        MockBedrock() as bedrock,
        MockVertex(tokens.issued.__contains__, PROJECT) as vertex,
        MockAnthropic(ANTHROPIC_KEY) as anthropic,
        MockAzure(AZURE_KEY) as azure,
    ):
        yield Clouds(bedrock, vertex, anthropic, azure, tokens)


@pytest.fixture
def fresh(clouds: Clouds) -> Clouds:
    for double in (clouds.bedrock, clouds.vertex, clouds.anthropic, clouds.azure):
        double.reset()
    return clouds


@pytest.fixture(scope="module")
def proxy(clouds: Clouds, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    directory = tmp_path_factory.mktemp("clouds")
    key_file = clouds.tokens.account.write_key_file(directory / "sa.json", clouds.tokens.token_uri)
    with run_proxy(config(clouds, key_file), directory) as running:
        yield running


def ask(proxy: RunningProxy, model: str, *, stream: bool, tools: Any = TOOLS) -> tuple[Any, Any]:
    """The calls the client gets (folded from the stream when streaming), and the headers."""
    client = sdk_client(proxy).chat.completions
    if not stream:
        raw = client.with_raw_response.create(model=model, messages=QUESTION, tools=tools)
        calls = raw.parse().choices[0].message.tool_calls or []
        return [(c.function.name, json.loads(c.function.arguments)) for c in calls], raw.headers
    raw = client.with_raw_response.create(model=model, messages=QUESTION, tools=tools, stream=True)
    folded: dict[int, list[str]] = {}
    finishes = []
    for chunk in raw.parse():
        for choice in chunk.choices:
            finishes += [choice.finish_reason] if choice.finish_reason else []
            for delta in choice.delta.tool_calls or ():
                call = folded.setdefault(delta.index, ["", ""])
                call[0] += (delta.function.name or "") if delta.function else ""
                call[1] += (delta.function.arguments or "") if delta.function else ""
    assert finishes == ["tool_calls"], finishes
    return [(name, json.loads(arguments)) for name, arguments in folded.values()], raw.headers


def vertex_path(method: str) -> str:
    return model_path(PROJECT, REGION, "anthropic", VERTEX_MODEL, method)


# --- fallbacks across kinds ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_claude_on_bedrock_throttled_falls_back_to_anthropics_api(
    proxy: RunningProxy, fresh: Clouds, stream: bool
) -> None:
    if stream:  # Bedrock's stream opens with 200, then throttles in its first frame
        fresh.bedrock.add_stream(BEDROCK_MODEL, stream_reply([stream_exception()]))
        whole = anthropic_tool_message()
        fresh.anthropic.answer(Reply(frames=anthropic_frames(message_events(whole))))
    else:
        throttled = bedrock_error(429, "ThrottlingException", "Too many requests")
        fresh.bedrock.add_converse(BEDROCK_MODEL, throttled)
        fresh.anthropic.answer(Reply(json=anthropic_tool_message()))

    calls, headers = ask(proxy, "claude-bedrock", stream=stream)

    assert calls == EXPECTED
    assert headers["x-toolrelay-model"] == "claude-anthropic"
    assert [call.model_id for call in fresh.bedrock.calls] == [BEDROCK_MODEL]
    sent = fresh.anthropic.requests(ANTHROPIC_PATH)
    assert len(sent) == 1
    assert [tool["name"] for tool in sent[0].body["tools"]] == ["get_weather", "get_time"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_claude_on_vertex_overloaded_falls_back_to_bedrock(
    proxy: RunningProxy, fresh: Clouds, stream: bool
) -> None:
    overloaded = Reply(529, json=anthropic_error("overloaded_error", "Overloaded"))
    fresh.vertex.add(overloaded, vertex_path("streamRawPredict" if stream else "rawPredict"))
    if stream:
        fresh.bedrock.add_stream(BEDROCK_MODEL, converse_stream("Checking.", BEDROCK_CALLS))
    else:
        fresh.bedrock.add_converse(BEDROCK_MODEL, converse_answer("Checking.", BEDROCK_CALLS))

    calls, headers = ask(proxy, "claude-vertex", stream=stream)

    assert calls == EXPECTED
    assert headers["x-toolrelay-model"] == "claude-bedrock"
    assert len(fresh.vertex.requests(vertex_path("streamRawPredict" if stream else "rawPredict")))
    (call,) = fresh.bedrock.calls
    assert call.operation == ("converse-stream" if stream else "converse")
    specs = call.exchange.body["toolConfig"]["tools"]
    assert [spec["toolSpec"]["name"] for spec in specs if "toolSpec" in spec] == [
        "get_weather",
        "get_time",
    ]


# --- quality routing --------------------------------------------------------------------------


def strict_tools() -> Any:
    """The usual tools, get_weather also requiring a `country` Azure's scripted call lacks."""
    tools = json.loads(json.dumps(TOOLS))
    weather = tools[0]["function"]["parameters"]
    weather["properties"]["country"] = {"type": "string"}
    weather["required"] = ["city", "country"]
    return tools


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_invalid_call_from_azure_goes_on_to_bedrock(
    proxy: RunningProxy, fresh: Clouds, stream: bool
) -> None:
    valid = [
        ("tooluse_w", "get_weather", {"city": "Paris", "country": "FR"}),
        ("tooluse_t", "get_time", {"timezone": "Asia/Tokyo", "hours24": True}),
    ]
    if stream:
        fresh.bedrock.add_stream(BEDROCK_MODEL, converse_stream("", valid))
    else:
        fresh.bedrock.add_converse(BEDROCK_MODEL, converse_answer("", valid))

    calls, headers = ask(proxy, "gpt-azure", stream=stream, tools=strict_tools())

    assert calls == [(name, arguments) for _, name, arguments in valid]
    assert headers["x-toolrelay-model"] == "claude-bedrock"
    if not stream:
        assert headers["x-toolrelay-tool-calls"] == "ok=2"
    assert len(fresh.azure.requests(azure_path())) == 1
    assert len(fresh.bedrock.calls) == 1


def azure_path() -> str:
    return "/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21"


# --- limits and metrics -----------------------------------------------------------------------


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of `name` whose labels include `labels`."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels}")


def test_a_models_rpm_holds_on_bedrock_and_its_usage_is_counted(
    proxy: RunningProxy, fresh: Clouds
) -> None:
    usage = {"inputTokens": 31, "outputTokens": 9, "totalTokens": 40}
    fresh.bedrock.add_converse(BEDROCK_MODEL, converse_answer("One.", usage=usage))
    fresh.bedrock.add_converse(BEDROCK_MODEL, converse_answer("Two."))
    client = sdk_client(proxy).with_options(max_retries=0)

    first = client.chat.completions.create(model="bedrock-limited", messages=QUESTION)
    assert first.choices[0].message.content == "One."
    assert first.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (31, 9)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="bedrock-limited", messages=QUESTION)
    response = caught.value.response
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["error"]["type"]
    assert len(fresh.bedrock.calls) == 1  # the refused request never reached Bedrock

    text = httpx.get(proxy.base_url.removesuffix("/v1") + "/metrics").text
    labels = {"model": "bedrock-limited", "provider": "aws"}
    assert metric(text, "toolrelay_tokens_total", type="prompt", **labels) == 31
    assert metric(text, "toolrelay_tokens_total", type="completion", **labels) == 9
    assert metric(text, "toolrelay_rate_limited_total", model="bedrock-limited") >= 1


# --- eval -------------------------------------------------------------------------------------


def first_tool_call(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The scripted model of the eval doubles: call the first offered tool with `{}`."""
    specs = (body.get("toolConfig") or {}).get("tools") or body.get("tools") or []
    if not specs:
        return None
    spec = specs[0]
    return spec["toolSpec"]["name"] if "toolSpec" in spec else spec["name"], {}


class EvalBedrock(MockBedrock):
    """Answers every Converse request it accepts: a call to its first tool."""

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        call = first_tool_call(exchange.body)
        calls = [("tooluse_eval", *call)] if call else []
        return converse_answer("" if calls else "No tool.", calls)


class EvalVertex(MockVertex):
    """Claude on Vertex answering every request it accepts: a call to its first tool."""

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        call = first_tool_call(exchange.body)
        content: list[dict[str, Any]] = [{"type": "text", "text": "No tool."}]
        if call:
            content = [{"type": "tool_use", "id": "toolu_eval", "name": call[0], "input": {}}]
        message = anthropic_tool_message() | {"content": content}
        return Reply(json=message | {"stop_reason": "tool_use" if call else "end_turn"})


def test_eval_runs_its_suite_through_every_cloud_kind(tmp_path: Path) -> None:
    anthropic, azure = MockAnthropic(ANTHROPIC_KEY), MockAzure(AZURE_KEY)
    with (
        GoogleTokenServer(ServiceAccount.generate()) as tokens,
        EvalBedrock() as bedrock,
        EvalVertex(tokens.issued.__contains__, PROJECT) as vertex,
        anthropic,
        azure,
    ):
        key_file = tokens.account.write_key_file(tmp_path / "sa.json", tokens.token_uri)
        clouds = Clouds(bedrock, vertex, anthropic, azure, tokens)
        (tmp_path / "config.yaml").write_text(config(clouds, key_file))
        models = "claude-bedrock,claude-vertex,gpt-azure"
        command = [sys.executable, "-m", "app", "eval", "--config", str(tmp_path / "config.yaml")]
        command += ["--models", models, "--json", str(tmp_path / "eval.json")]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            cwd=REPO,
            env=proxy_environment(),
        )
        assert done.returncode == 0, done.stderr
        asked = len(bedrock.calls)
    summaries = {m["model"]: m for m in json.loads((tmp_path / "eval.json").read_text())["models"]}
    assert list(summaries) == models.split(",")
    for name, summary in summaries.items():
        failed = [reason for reason in summary["errors"] if reason.startswith("request_")]
        assert failed == [], (name, summary)  # every request was answered
        assert summary["cases"] > 0
        assert summary["structured_rate"] == 1.0, (name, summary)
        assert summary["tokens"]["prompt"] > 0, (name, summary)
    # Its own cases, and gpt-azure's whose calls fell back to it (on_invalid: fallback).
    assert asked > summaries["claude-bedrock"]["cases"]
    # One script behind two kinds: the same verdicts, case for case.
    assert summaries["claude-bedrock"]["errors"] == summaries["claude-vertex"]["errors"]
    assert summaries["gpt-azure"]["wrong_tool_rate"] > 0  # Azure's script calls its own tools
