"""The OpenAI Agents SDK (`openai-agents`) with an agent whose `output_type` is a pydantic model,
its OpenAI client's base URL at a real proxy process: the SDK asks /v1/responses for
`text.format` json_schema, and `final_output` must be the parsed model instance, with
`Runner.run` and `Runner.run_streamed`, on the built-in demo kind (offline: JSON sampled from the
schema) and in front of an openai-kind chat completions mock (the schema arrives as
`response_format`), a validating anthropic-kind mock (as `output_config.format`) and a validating
gemini-kind mock (as `responseJsonSchema` with `responseMimeType`), each answering JSON that
matches the schema in its own format."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLAUDE_MODEL,
    CLIENT_KEY,
    GEMINI_KEY,
    GEMINI_MODEL,
    RunningProxy,
    every_kind_config,
    run_proxy,
)
from tests.helpers.mock_anthropic import MockAnthropic, message, message_events
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
from tests.helpers.upstream_answers import openai_text_chunks, openai_tool_completion

pytestmark = pytest.mark.e2e

INSTRUCTIONS = "Extract the city's weather report."
QUESTION = "Paris: sunny, 21 C, light wind from the west."


class Wind(BaseModel):
    direction: Literal["north", "east", "south", "west"]
    strong: bool


class Report(BaseModel):
    city: str
    sky: Literal["sunny", "cloudy", "rain"]
    celsius: int = Field(ge=-60, le=60)
    wind: Wind
    notes: list[str]


PARIS = Report(
    city="Paris",
    sky="sunny",
    celsius=21,
    wind=Wind(direction="west", strong=False),
    notes=["light wind"],
)
PARIS_JSON = json.dumps(PARIS.model_dump())


@pytest.fixture(autouse=True, scope="module")
def _no_tracing() -> Iterator[None]:
    """The SDK exports traces to api.openai.com by default: nothing leaves 127.0.0.1."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


Mocks = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def mocks() -> Iterator[Mocks]:
    with MockUpstream() as oa, MockAnthropic(ANTHROPIC_KEY) as an, MockGemini(GEMINI_KEY) as gm:
        yield {"openai": oa, "anthropic": an, "gemini": gm}


@pytest.fixture(autouse=True)
def _fresh(mocks: Mocks) -> None:
    for mock in mocks.values():
        mock.reset()


@pytest.fixture(scope="module")
def proxy(mocks: Mocks, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    oa, an, gm = (mocks[kind].base_url for kind in ("openai", "anthropic", "gemini"))
    config = every_kind_config(oa, an, gm)
    with run_proxy(config, tmp_path_factory.mktemp("agents-structured")) as running:
        yield running


# --- scripting the mocks: the report as JSON text, in each kind's format -------------------------


def script(mocks: Mocks, kind: str, *, streamed: bool) -> None:
    half = len(PARIS_JSON) // 2
    halves = PARIS_JSON[:half], PARIS_JSON[half:]
    if kind == "openai":
        if streamed:
            reply = Reply(frames=openai_frames(openai_text_chunks(*halves)))
        else:
            completion = openai_tool_completion()
            completion["choices"][0]["message"] = {
                "role": "assistant",
                "content": PARIS_JSON,
                "refusal": None,
            }
            completion["choices"][0]["finish_reason"] = "stop"
            reply = Reply(json=completion)
        mocks["openai"].add(reply)
    elif kind == "anthropic":
        whole = message([{"type": "text", "text": PARIS_JSON}], "end_turn")
        anthropic = mocks["anthropic"]
        assert isinstance(anthropic, MockAnthropic)
        frames = anthropic_frames(message_events(whole))
        anthropic.answer(Reply(frames=frames) if streamed else Reply(json=whole))
    else:
        gemini = mocks["gemini"]
        assert isinstance(gemini, MockGemini)
        if streamed:
            frames = [
                Frame(gemini_answer([{"text": halves[0]}], finish=None, usage=None)),
                Frame(gemini_answer([{"text": halves[1]}])),
            ]
            gemini.answer(Reply(frames=frames), stream=True, model=GEMINI_MODEL)
        else:
            gemini.answer(Reply(json=gemini_answer([{"text": PARIS_JSON}])), model=GEMINI_MODEL)


def schema_sent(mocks: Mocks, kind: str, streamed: bool) -> dict[str, Any]:
    """The JSON schema the upstream got, checked to be where the kind wants it."""
    if kind == "openai":
        (exchange,) = mocks["openai"].requests(OPENAI_PATH)
        body = exchange.body
        assert bool(body.get("stream")) is streamed
        response_format = body["response_format"]
        assert response_format["type"] == "json_schema"
        assert response_format["json_schema"]["strict"] is True
        assert response_format["json_schema"]["name"]
        return dict(response_format["json_schema"]["schema"])
    if kind == "anthropic":
        (exchange,) = mocks["anthropic"].requests(ANTHROPIC_PATH)
        body = exchange.body
        assert body["model"] == CLAUDE_MODEL
        assert bool(body.get("stream")) is streamed
        output_format = body["output_config"]["format"]
        assert output_format["type"] == "json_schema"
        assert "tools" not in body
        return dict(output_format["schema"])
    gemini = mocks["gemini"]
    assert isinstance(gemini, MockGemini)
    (exchange,) = gemini.gemini_requests()
    assert GEMINI_MODEL in exchange.path
    assert ("streamGenerateContent" in exchange.path) is streamed
    config = exchange.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert "responseSchema" not in config
    return dict(config["responseJsonSchema"])


# --- the agent -----------------------------------------------------------------------------------


class SentRequests:
    """The bodies of the SDK's POST /v1/responses."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def on_request(self, request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.bodies.append(json.loads(request.content))


async def run_agent(proxy: RunningProxy, model: str, *, streamed: bool) -> tuple[Any, SentRequests]:
    sent = SentRequests()
    async with httpx.AsyncClient(event_hooks={"request": [sent.on_request]}, timeout=20) as http:
        client = AsyncOpenAI(
            base_url=proxy.base_url, api_key=CLIENT_KEY, max_retries=0, http_client=http
        )
        config = RunConfig(model=model, model_provider=OpenAIProvider(openai_client=client))
        agent = Agent(name="extractor", instructions=INSTRUCTIONS, output_type=Report)
        if streamed:
            streaming = Runner.run_streamed(agent, QUESTION, run_config=config)
            async for _event in streaming.stream_events():
                pass
            return streaming.final_output, sent
        result = await Runner.run(agent, QUESTION, run_config=config)
        return result.final_output, sent


def asked_for_the_schema(sent: SentRequests) -> dict[str, Any]:
    """One request, carrying the model's schema as Responses `text.format`."""
    (body,) = sent.bodies
    text_format = body["text"]["format"]
    assert text_format["type"] == "json_schema"
    assert text_format["strict"] is True
    schema: dict[str, Any] = text_format["schema"]
    assert set(schema["properties"]) == {"city", "sky", "celsius", "wind", "notes"}
    return schema


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
KINDS = [
    pytest.param("openai", "mini", id="openai"),
    pytest.param("anthropic", "claude", id="anthropic"),
    pytest.param("gemini", "gem", id="gemini"),
]


@STREAMED
@pytest.mark.parametrize(("kind", "model"), KINDS)
def test_output_type_through_each_kind(
    mocks: Mocks, proxy: RunningProxy, kind: str, model: str, streamed: bool
) -> None:
    script(mocks, kind, streamed=streamed)

    output, sent = asyncio.run(run_agent(proxy, model, streamed=streamed))

    assert isinstance(output, Report)
    assert output == PARIS
    asked = asked_for_the_schema(sent)
    upstream_schema = schema_sent(mocks, kind, streamed)
    # The schema reaches the upstream as the SDK wrote it (for Gemini too: plain JSON Schema).
    assert upstream_schema["properties"]["sky"] == asked["properties"]["sky"]
    assert upstream_schema["required"] == asked["required"]
    assert "Wind" in json.dumps(upstream_schema)


@STREAMED
def test_output_type_on_demo_kind(proxy: RunningProxy, streamed: bool) -> None:
    output, sent = asyncio.run(run_agent(proxy, "demo", streamed=streamed))

    # Offline: JSON sampled from the schema, validated by the SDK into the model.
    assert isinstance(output, Report)
    assert output.sky in ("sunny", "cloudy", "rain")
    assert -60 <= output.celsius <= 60
    assert isinstance(output.wind, Wind)
    asked_for_the_schema(sent)
