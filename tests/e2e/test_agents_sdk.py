"""The OpenAI Agents SDK (`openai-agents`) on its defaults, its OpenAI client's base URL at a real
proxy process: its default model (OpenAIResponsesModel, on /v1/responses) runs an agent with two
function tools to the end, in front of an openai-kind chat completions mock, a validating
anthropic-kind and a validating gemini-kind mock (the first turn calls both tools, the next
answers text, each in its kind's format) and on the built-in demo kind; with the SDK sending the
whole conversation each turn, and with `auto_previous_response_id` (the SDK sends only the new
items and `previous_response_id`, the proxy rebuilds the rest from its store). Each upstream
must get the whole conversation in its own shape."""

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

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLAUDE_MODEL,
    CLIENT_KEY,
    GEMINI_KEY,
    GEMINI_MODEL,
    SECRETS,
    RunningProxy,
    every_kind_config,
    run_proxy,
)
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_gemini import (
    GEMINI_TEXT,
    MockGemini,
    gemini_answer,
    gemini_tool_answer,
    gemini_tool_frames,
    issued_signatures,
)
from tests.helpers.mock_upstream import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import (
    ANTHROPIC_TEXT,
    CALLS,
    anthropic_tool_message,
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


class ScriptedAnthropic(MockAnthropic):
    """The same script in the Messages API's format (text and both tool_use blocks, then text
    once a tool_result came back), screened as Anthropic screens requests."""

    def __init__(self) -> None:
        super().__init__(ANTHROPIC_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        answered = any(
            isinstance(block, dict) and block.get("type") == "tool_result"
            for message in exchange.body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
        )
        whole = anthropic_tool_message()
        if answered:
            whole |= {"content": [{"type": "text", "text": FINAL_TEXT}], "stop_reason": "end_turn"}
        if exchange.body.get("stream"):
            return Reply(frames=anthropic_frames(message_events(whole)))
        return Reply(json=whole)


class ScriptedGemini(MockGemini):
    """The same script in Gemini's format (text and both functionCalls, the first signed, then
    text once a functionResponse came back), screened as Gemini screens requests (its
    signature must come back)."""

    def __init__(self) -> None:
        super().__init__(GEMINI_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        answered = any(
            "functionResponse" in part
            for content in exchange.body["contents"]
            for part in content.get("parts") or ()
        )
        stream = "streamGenerateContent" in exchange.path
        if answered:
            text = FINAL_TEXT
            halves = [text[:20], text[20:]]
            if stream:
                first = Frame(gemini_answer([{"text": halves[0]}], finish=None))
                return Reply(frames=[first, Frame(gemini_answer([{"text": halves[1]}]))])
            return Reply(json=gemini_answer([{"text": text}]))
        reply = Reply(frames=gemini_tool_frames()) if stream else Reply(json=gemini_tool_answer())
        self.issued.update(issued_signatures(reply))
        return reply


Upstreams = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with ScriptedOpenAI() as oa, ScriptedAnthropic() as an, ScriptedGemini() as gm:
        yield {"openai": oa, "anthropic": an, "gemini": gm}


@pytest.fixture(scope="module")
def proxy(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    """One proxy for the module: a model per kind, and the demo."""
    oa, an, gm = (upstreams[kind].base_url for kind in ("openai", "anthropic", "gemini"))
    config = every_kind_config(oa, an, gm)
    with run_proxy(config, tmp_path_factory.mktemp("agents-proxy")) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstreams: Upstreams) -> None:
    for upstream in upstreams.values():
        upstream.reset()


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


def openai_conversation(body: dict[str, Any]) -> list[Any]:
    """The conversation an openai-kind upstream got, as (role, what) tuples."""
    seen: list[Any] = []
    for message in body["messages"]:
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


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content)


def anthropic_conversation(body: dict[str, Any]) -> list[Any]:
    """The conversation an anthropic-kind upstream got: text, tool_use and tool_result blocks."""
    seen: list[Any] = [("system", _text(body["system"]))]
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        what: list[Any] = []
        for block in blocks:
            if block["type"] == "text":
                what.append(("text", block["text"]))
            elif block["type"] == "tool_use":
                what.append(("tool_use", block["id"], block["name"], block["input"]))
            else:
                assert block["type"] == "tool_result", block
                what.append(("tool_result", block["tool_use_id"], _text(block["content"])))
        seen.append((message["role"], what))
    return seen


def gemini_conversation(body: dict[str, Any]) -> list[Any]:
    """The conversation a gemini-kind upstream got: text, functionCall, functionResponse."""
    seen: list[Any] = [("system", _text(body["systemInstruction"]["parts"]))]
    for content in body["contents"]:
        what: list[Any] = []
        for part in content["parts"]:
            if "functionCall" in part:
                call = part["functionCall"]
                what.append(("functionCall", call["name"], call["args"]))
            elif "functionResponse" in part:
                response = part["functionResponse"]
                what.append(("functionResponse", response["name"], response["response"]))
            else:
                what.append(("text", part["text"]))
        seen.append((content["role"], what))
    return seen


def expected_conversation(kind: str) -> list[Any]:
    """The whole conversation of the second upstream request, in the kind's own shape."""
    calls = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]
    if kind == "openai":
        return [
            ("system", INSTRUCTIONS),
            ("user", QUESTION),
            ("assistant", calls),
            ("tool", CALLS[0][0], WEATHER_RESULT),
            ("tool", CALLS[1][0], TIME_RESULT),
        ]
    if kind == "anthropic":
        uses = [("tool_use", *call) for call in calls]
        return [
            ("system", INSTRUCTIONS),
            ("user", [("text", QUESTION)]),
            ("assistant", [("text", ANTHROPIC_TEXT), *uses]),
            (
                "user",
                [
                    ("tool_result", CALLS[0][0], WEATHER_RESULT),
                    ("tool_result", CALLS[1][0], TIME_RESULT),
                ],
            ),
        ]
    return [
        ("system", INSTRUCTIONS),
        ("user", [("text", QUESTION)]),
        ("model", [("text", GEMINI_TEXT), *(("functionCall", n, a) for _, n, a in calls)]),
        (
            "user",
            [
                ("functionResponse", "get_weather", {"result": WEATHER_RESULT}),
                ("functionResponse", "get_time", {"result": TIME_RESULT}),
            ],
        ),
    ]


def upstream_requests(upstreams: Upstreams, kind: str) -> list[Exchange]:
    upstream = upstreams[kind]
    if isinstance(upstream, MockGemini):
        return upstream.gemini_requests()
    return upstream.requests(ANTHROPIC_PATH if kind == "anthropic" else OPENAI_PATH)


def tool_names(kind: str, body: dict[str, Any]) -> list[str]:
    if kind == "openai":
        return [tool["function"]["name"] for tool in body["tools"]]
    if kind == "anthropic":
        return [tool["name"] for tool in body["tools"]]
    return [d["name"] for tool in body["tools"] for d in tool["functionDeclarations"]]


CONVERSATIONS = {
    "openai": openai_conversation,
    "anthropic": anthropic_conversation,
    "gemini": gemini_conversation,
}
KINDS = [
    pytest.param("openai", "mini", id="openai"),
    pytest.param("anthropic", "claude", id="anthropic"),
    pytest.param("gemini", "gem", id="gemini"),
]
MODES = [
    pytest.param(False, False, id="full-history"),
    pytest.param(True, False, id="previous-response-id"),
    pytest.param(False, True, id="streamed"),
    pytest.param(True, True, id="streamed-previous-response-id"),
]


@pytest.mark.parametrize(("chained", "streamed"), MODES)
@pytest.mark.parametrize(("kind", "model"), KINDS)
def test_agent_runs_both_tools_through_each_kind(
    upstreams: Upstreams,
    proxy: RunningProxy,
    kind: str,
    model: str,
    chained: bool,
    streamed: bool,
) -> None:
    output, log, sent = asyncio.run(run_agent(proxy, model, chained=chained, streamed=streamed))

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
    exchanges = upstream_requests(upstreams, kind)
    assert len(exchanges) == 2
    if kind == "openai":
        assert exchanges[0].body["model"] == "gpt-4o-mini"
    elif kind == "anthropic":
        assert exchanges[0].body["model"] == CLAUDE_MODEL
    else:
        assert GEMINI_MODEL in exchanges[0].path
    assert all(("stream" in e.path or bool(e.body.get("stream"))) is streamed for e in exchanges)
    assert CONVERSATIONS[kind](exchanges[1].body) == expected_conversation(kind)
    assert tool_names(kind, exchanges[1].body) == ["get_weather", "get_time"]


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
