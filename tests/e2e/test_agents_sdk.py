"""The OpenAI Agents SDK (`openai-agents`) on its defaults, its OpenAI client's base URL at a real
proxy process: its default model (OpenAIResponsesModel, on /v1/responses) runs an agent with two
function tools to the end, in front of an openai-kind chat completions mock (the first turn calls
both tools, the next answers text) and on the built-in demo kind; with the SDK sending the whole
conversation each turn, and with `auto_previous_response_id` (the SDK sends only the new items
and `previous_response_id`, the proxy rebuilds the rest from its store)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import pytest
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI

from tests.e2e.conftest import CLIENT_KEY, SECRETS, RunningProxy
from tests.helpers.mock_upstream import OPENAI_PATH, Exchange, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import (
    CALLS,
    openai_text_chunks,
    openai_tool_chunks,
    openai_tool_completion,
)

pytestmark = pytest.mark.e2e

INSTRUCTIONS = "You answer questions about weather and time. Use the tools."
QUESTION = "Weather in Paris and time in Tokyo?"
FINAL_TEXT = "Paris is sunny at 21 C; it is 18:30 in Tokyo."
WEATHER_RESULT = "sunny, 21 C"
TIME_RESULT = "18:30"


@pytest.fixture(autouse=True, scope="module")
def _no_tracing() -> Iterator[None]:
    """The SDK exports traces to api.openai.com by default: nothing leaves 127.0.0.1."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@dataclass
class ToolLog:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def agent_with_tools(log: ToolLog) -> Agent[Any]:
    @function_tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"]) -> str:
        """Current weather in a city."""
        log.calls.append(("get_weather", {"city": city, "unit": unit}))
        return WEATHER_RESULT

    @function_tool
    def get_time(timezone: str, hours24: bool) -> str:
        """Local time in a timezone."""
        log.calls.append(("get_time", {"timezone": timezone, "hours24": hours24}))
        return TIME_RESULT

    return Agent(name="assistant", instructions=INSTRUCTIONS, tools=[get_weather, get_time])


class ScriptedOpenAI(MockUpstream):
    """A chat completions upstream that answers as a model would: both tool calls while the
    conversation has no tool result, then text; streamed when asked to stream."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if exchange.path != OPENAI_PATH or not isinstance(exchange.body, dict):
            return None
        messages = exchange.body.get("messages") or []
        answered = any(message.get("role") == "tool" for message in messages)
        if exchange.body.get("stream"):
            chunks = openai_text_chunks("Paris is sunny at 21 C; ", "it is 18:30 in Tokyo.")
            return Reply(frames=openai_frames(chunks if answered else openai_tool_chunks()))
        if answered:
            completion = openai_tool_completion()
            completion["choices"][0]["message"] = {"role": "assistant", "content": FINAL_TEXT}
            completion["choices"][0]["finish_reason"] = "stop"
            return Reply(json=completion)
        return Reply(json=openai_tool_completion())


@pytest.fixture(scope="module")
def upstream() -> Iterator[MockUpstream]:
    with ScriptedOpenAI() as server:
        yield server


class SentRequests:
    """What the SDK sent to the proxy (bodies of POST /v1/responses), and no secret back."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def on_request(self, request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.bodies.append(json.loads(request.content))

    async def on_response(self, response: httpx.Response) -> None:
        seen = "\n".join(f"{name}: {value}" for name, value in response.headers.multi_items())
        for secret in SECRETS:
            assert secret not in seen


async def run_agent(
    proxy: RunningProxy, model: str, *, chained: bool, streamed: bool
) -> tuple[str, ToolLog, SentRequests]:
    log, sent = ToolLog(), SentRequests()
    hooks = {"request": [sent.on_request], "response": [sent.on_response]}
    async with httpx.AsyncClient(event_hooks=hooks, timeout=20) as http_client:
        client = AsyncOpenAI(
            base_url=proxy.base_url, api_key=CLIENT_KEY, max_retries=0, http_client=http_client
        )
        config = RunConfig(model=model, model_provider=OpenAIProvider(openai_client=client))
        agent = agent_with_tools(log)
        if streamed:
            streaming = Runner.run_streamed(
                agent, QUESTION, run_config=config, auto_previous_response_id=chained
            )
            async for _event in streaming.stream_events():
                pass
            output = streaming.final_output
        else:
            result = await Runner.run(
                agent, QUESTION, run_config=config, auto_previous_response_id=chained
            )
            output = result.final_output
    return str(output), log, sent


def roles_and_calls(messages: list[dict[str, Any]]) -> list[Any]:
    """The conversation an upstream got, as (role, what) pairs."""
    seen: list[Any] = []
    for message in messages:
        role = message["role"]
        if role == "assistant":
            calls = [
                (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
                for call in message.get("tool_calls") or []
            ]
            seen.append((role, calls))
        elif role == "tool":
            seen.append((role, message["tool_call_id"], message["content"]))
        else:
            content = message["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            seen.append((role, text))
    return seen


MODES = [
    pytest.param(False, False, id="full-history"),
    pytest.param(True, False, id="previous-response-id"),
    pytest.param(False, True, id="streamed"),
    pytest.param(True, True, id="streamed-previous-response-id"),
]


@pytest.mark.parametrize(("chained", "streamed"), MODES)
def test_agent_runs_both_tools_through_openai_kind(
    upstream: MockUpstream, proxy: RunningProxy, chained: bool, streamed: bool
) -> None:
    output, log, sent = asyncio.run(run_agent(proxy, "mini", chained=chained, streamed=streamed))

    assert output == FINAL_TEXT
    assert log.calls == [(name, json.loads(arguments)) for _, name, arguments in CALLS]
    assert len(sent.bodies) == 2
    first, second = sent.bodies
    assert "previous_response_id" not in first
    if chained:
        # The SDK sent only the tool results; the proxy put the stored turn before them.
        assert second["previous_response_id"].startswith("resp_")
        assert {item["type"] for item in second["input"]} == {"function_call_output"}
    else:
        assert second.get("previous_response_id") is None
    exchanges = upstream.requests(OPENAI_PATH)
    assert len(exchanges) == 2
    assert exchanges[0].body["model"] == "gpt-4o-mini"
    assert roles_and_calls(exchanges[1].body["messages"]) == [
        ("system", INSTRUCTIONS),
        ("user", QUESTION),
        ("assistant", [(call_id, name, json.loads(args)) for call_id, name, args in CALLS]),
        ("tool", CALLS[0][0], WEATHER_RESULT),
        ("tool", CALLS[1][0], TIME_RESULT),
    ]
    assert [tool["function"]["name"] for tool in exchanges[1].body["tools"]] == [
        "get_weather",
        "get_time",
    ]


@pytest.mark.parametrize(("chained", "streamed"), MODES)
def test_agent_runs_a_tool_on_demo_kind(proxy: RunningProxy, chained: bool, streamed: bool) -> None:
    output, log, sent = asyncio.run(run_agent(proxy, "demo", chained=chained, streamed=streamed))

    # The demo model calls the first tool with schema-valid arguments, then quotes its result.
    assert len(log.calls) == 1
    name, arguments = log.calls[0]
    assert name == "get_weather"
    assert isinstance(arguments["city"], str)
    assert arguments["unit"] in ("celsius", "fahrenheit")
    assert WEATHER_RESULT in output
    assert len(sent.bodies) == 2
    assert ("previous_response_id" in sent.bodies[1]) is chained
