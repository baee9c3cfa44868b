"""Run a one-tool agent loop in each popular framework against ToolRelay's offline `demo` model,
changing only the framework's base URL, and print one line per framework: name, version,
PASS/FAIL, and the one line of code that points it at ToolRelay.

A run passes when the framework called `get_weather` (the demo calls offered tools) and came
back with a final answer that quotes the tool's result. Loops that need a final-answer tool
(smolagents' final_answer) are capped: the demo answers in text after a tool result, which
such a loop does not take as its end, and that is reported as found, not papered over.

Started by scripts/try_frameworks.sh, which makes the venv and starts the proxy:
    try_frameworks.py --base http://127.0.0.1:PORT [--only NAME ...]
"""

# Each case imports its framework inside: one missing or broken framework fails its own line
# only, and instructor runs from a venv of its own (see try_frameworks.sh).
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.metadata
import io
import json
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL = "demo"
KEY = "x"
QUESTION = "What is the weather in Paris? Use the get_weather tool."
WEATHER = "sunny, 21 C"
MAX_TURNS = 6


@dataclass
class Outcome:
    calls: list[str] = field(default_factory=list)
    answer: str = ""
    note: str = ""


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    CURRENT.calls.append(city)
    return f"The weather in {city} is {WEATHER}."


CURRENT = Outcome()


# --- what went over the wire ----------------------------------------------------------------
# Every framework here talks HTTP through httpx or httpx2; their clients' `send` is wrapped to
# note each request to ToolRelay (path, the fields that matter, status; an error's body), so a
# failure can be reported as the request that failed and what ToolRelay answered.


@dataclass
class Exchange:
    method: str
    path: str
    fields: str
    status: int = 0
    error: str = ""

    def __str__(self) -> str:
        text = f"{self.method} {self.path} {self.fields} -> {self.status}"
        return f"{text} {self.error}" if self.error else text


WIRE: list[Exchange] = []


def _fields(content: bytes) -> str:
    try:
        body = json.loads(content or b"null")
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    shown = {}
    for name in ("thread", "previous_response_id", "tool_choice", "stream", "store"):
        if name in body:
            shown[name] = body[name]
    if isinstance(body.get("messages"), list):
        shown["messages"] = [m.get("role") for m in body["messages"] if isinstance(m, dict)]
    if isinstance(body.get("input"), list):
        shown["input"] = [
            i.get("type", i.get("role")) for i in body["input"] if isinstance(i, dict)
        ]
    return json.dumps(shown, separators=(",", ":"))


def _noted(request: Any) -> Exchange:
    exchange = Exchange(request.method, request.url.path, _fields(request.content))
    WIRE.append(exchange)
    return exchange


def record_wire() -> None:
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        sync_send, async_send = module.Client.send, module.AsyncClient.send

        def send(self: Any, request: Any, *args: Any, _send: Any = sync_send, **kw: Any) -> Any:
            exchange = _noted(request)
            response = _send(self, request, *args, **kw)
            exchange.status = response.status_code
            if response.status_code >= 400:
                exchange.error = response.read().decode(errors="replace")[:500]
            return response

        async def asend(
            self: Any, request: Any, *args: Any, _send: Any = async_send, **kw: Any
        ) -> Any:
            exchange = _noted(request)
            response = await _send(self, request, *args, **kw)
            exchange.status = response.status_code
            if response.status_code >= 400:
                exchange.error = (await response.aread()).decode(errors="replace")[:500]
            return response

        module.Client.send, module.AsyncClient.send = send, asend


@dataclass(frozen=True)
class Case:
    name: str
    package: str
    line: Callable[[str], str]  # base URL (no /v1) -> the line that points it at ToolRelay
    run: Callable[[str], None]
    api: str
    venv: str  # which of try_frameworks.sh's venvs has it: main, llama-index, instructor


CASES: list[Case] = []


def case(name: str, package: str, api: str, line: Callable[[str], str], venv: str = "main"):
    def register(run: Callable[[str], None]) -> Callable[[str], None]:
        CASES.append(Case(name, package, line, run, api, venv))
        return run

    return register


# --- pydantic-ai ----------------------------------------------------------------------------


def _pydantic_ai(base: str, model_class: str) -> None:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.models import openai as models
    from pydantic_ai.providers.openai import OpenAIProvider

    model = getattr(models, model_class)(
        MODEL, provider=OpenAIProvider(base_url=f"{base}/v1", api_key=KEY)
    )
    agent = Agent(model, tools=[get_weather])
    result = agent.run_sync(QUESTION, usage_limits=UsageLimits(request_limit=MAX_TURNS))
    CURRENT.answer = str(result.output)


@case(
    "pydantic-ai (Responses)",
    "pydantic-ai-slim",
    "/v1/responses",
    lambda b: (
        f'OpenAIResponsesModel("demo", provider=OpenAIProvider(base_url="{b}/v1", api_key="x"))'
    ),
)
def pydantic_ai_responses(base: str) -> None:
    _pydantic_ai(base, "OpenAIResponsesModel")


@case(
    "pydantic-ai (Chat)",
    "pydantic-ai-slim",
    "/v1/chat/completions",
    lambda b: f'OpenAIChatModel("demo", provider=OpenAIProvider(base_url="{b}/v1", api_key="x"))',
)
def pydantic_ai_chat(base: str) -> None:
    _pydantic_ai(base, "OpenAIChatModel")


# --- LangChain / LangGraph ------------------------------------------------------------------


@case(
    "langchain-openai + langgraph",
    "langchain-openai",
    "/v1/chat/completions",
    lambda b: f'ChatOpenAI(base_url="{b}/v1", api_key="x", model="demo")',
)
def langchain(base: str) -> None:
    warnings.filterwarnings("ignore", message="create_react_agent has been moved")
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    llm = ChatOpenAI(base_url=f"{base}/v1", api_key=KEY, model=MODEL)
    agent = create_react_agent(llm, [tool(get_weather)])
    state = agent.invoke({"messages": [("user", QUESTION)]}, {"recursion_limit": 2 * MAX_TURNS + 1})
    CURRENT.answer = str(state["messages"][-1].content)


# --- LlamaIndex -----------------------------------------------------------------------------


@case(
    "llama-index OpenAILike",
    "llama-index-llms-openai-like",
    "/v1/chat/completions",
    lambda b: (
        f'OpenAILike(model="demo", api_base="{b}/v1", api_key="x", is_chat_model=True, '
        "is_function_calling_model=True)"
    ),
    venv="llama-index",
)
def llama_index(base: str) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(
        model=MODEL,
        api_base=f"{base}/v1",
        api_key=KEY,
        is_chat_model=True,
        is_function_calling_model=True,
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(get_weather)], llm=llm)

    async def run() -> str:
        return str(await agent.run(QUESTION, max_iterations=MAX_TURNS))

    CURRENT.answer = asyncio.run(run())


# --- instructor -----------------------------------------------------------------------------


@case(
    "instructor (Mode.TOOLS)",
    "instructor",
    "/v1/chat/completions",
    lambda b: (
        f'instructor.from_openai(OpenAI(base_url="{b}/v1", api_key="x"), '
        "mode=instructor.Mode.TOOLS)"
    ),
    venv="instructor",
)
def instructor_tools(base: str) -> None:
    # instructor has no agent loop: it makes the model call one tool whose schema is the
    # response model (Mode.TOOLS, tools + tool_choice, not response_format). The loop here is
    # the user's own: extract the call, run it, ask again with the result for the answer.
    import instructor
    from openai import OpenAI
    from pydantic import BaseModel, Field

    class GetWeather(BaseModel):
        """Get the current weather for a city."""

        city: str = Field(description="The city's name.")

    raw = OpenAI(base_url=f"{base}/v1", api_key=KEY)
    client = instructor.from_openai(raw, mode=instructor.Mode.TOOLS)
    call = client.chat.completions.create(
        model=MODEL,
        response_model=GetWeather,
        messages=[{"role": "user", "content": QUESTION}],
        max_retries=0,
    )
    result = get_weather(call.city)
    answer = raw.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "GetWeather", "arguments": call.model_dump_json()},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ],
    )
    CURRENT.answer = answer.choices[0].message.content or ""


# --- smolagents -----------------------------------------------------------------------------


@case(
    "smolagents ToolCallingAgent",
    "smolagents",
    "/v1/chat/completions",
    lambda b: f'OpenAIServerModel(model_id="demo", api_base="{b}/v1", api_key="x")',
)
def smolagents_run(base: str) -> None:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    model = OpenAIServerModel(model_id=MODEL, api_base=f"{base}/v1", api_key=KEY)
    agent = ToolCallingAgent(
        tools=[tool(get_weather)], model=model, max_steps=MAX_TURNS, verbosity_level=0
    )
    with contextlib.redirect_stdout(io.StringIO()):  # its "Reached max steps." line
        answer = agent.run(QUESTION)
    steps = [s for s in agent.memory.steps if type(s).__name__ == "ActionStep"]
    if len(steps) >= MAX_TURNS:
        CURRENT.note = (
            f"hit max_steps={MAX_TURNS}: the demo never calls final_answer "
            f"(tool calls: {CURRENT.calls})"
        )
        return
    CURRENT.answer = str(answer)


# --- anthropic ------------------------------------------------------------------------------


def _anthropic(base: str, stream: bool) -> None:
    from anthropic import Anthropic, beta_tool

    client = Anthropic(base_url=base, api_key=KEY)
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=512,
        tools=[beta_tool(get_weather)],
        messages=[{"role": "user", "content": QUESTION}],
        max_iterations=MAX_TURNS,
        stream=stream,
    )
    last = None
    for item in runner:  # a message per turn; a stream per turn when streamed
        last = item.get_final_message() if stream else item
    assert last is not None
    CURRENT.answer = "".join(b.text for b in last.content if b.type == "text")


@case(
    "anthropic tool_runner",
    "anthropic",
    "/v1/messages",
    lambda b: f'Anthropic(base_url="{b}", api_key="x")',
)
def anthropic_runner(base: str) -> None:
    _anthropic(base, stream=False)


@case(
    "anthropic tool_runner stream",
    "anthropic",
    "/v1/messages",
    lambda b: f'Anthropic(base_url="{b}", api_key="x")',
)
def anthropic_runner_stream(base: str) -> None:
    _anthropic(base, stream=True)


# --- OpenAI Agents SDK ----------------------------------------------------------------------


def _agents(base: str, chat: bool, stream: bool = False, chain: bool = False) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_default_openai_client,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=f"{base}/v1", api_key=KEY)
    if chat:
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    else:  # the SDK's default: a model name, the default client, the Responses API
        set_default_openai_client(client, use_for_tracing=False)
        model = MODEL
    agent = Agent(
        name="weather",
        instructions="Answer with the tool's result.",
        model=model,
        tools=[function_tool(get_weather)],
    )
    if not stream:
        # chain: each turn sends only its new items, on from the last one's previous_response_id
        result = Runner.run_sync(
            agent, QUESTION, max_turns=MAX_TURNS, auto_previous_response_id=chain
        )
        CURRENT.answer = str(result.final_output)
        return

    async def run() -> str:
        streamed = Runner.run_streamed(agent, QUESTION, max_turns=MAX_TURNS)
        async for _ in streamed.stream_events():
            pass
        return str(streamed.final_output)

    CURRENT.answer = asyncio.run(run())


@case(
    "openai-agents (Responses)",
    "openai-agents",
    "/v1/responses",
    lambda b: f'set_default_openai_client(AsyncOpenAI(base_url="{b}/v1", api_key="x"))',
)
def agents_responses(base: str) -> None:
    _agents(base, chat=False)


@case(
    "openai-agents (Responses, stream)",
    "openai-agents",
    "/v1/responses",
    lambda b: f'set_default_openai_client(AsyncOpenAI(base_url="{b}/v1", api_key="x"))',
)
def agents_responses_stream(base: str) -> None:
    _agents(base, chat=False, stream=True)


@case(
    "openai-agents (Responses, chained)",
    "openai-agents",
    "/v1/responses",
    lambda b: f'set_default_openai_client(AsyncOpenAI(base_url="{b}/v1", api_key="x"))',
)
def agents_responses_chained(base: str) -> None:
    _agents(base, chat=False, chain=True)


@case(
    "openai-agents (Chat)",
    "openai-agents",
    "/v1/chat/completions",
    lambda b: (
        f'OpenAIChatCompletionsModel(model="demo", openai_client=AsyncOpenAI(base_url="{b}/v1", '
        'api_key="x"))'
    ),
)
def agents_chat(base: str) -> None:
    _agents(base, chat=True)


# --- running --------------------------------------------------------------------------------


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def verdict(outcome: Outcome) -> tuple[bool, str]:
    if outcome.note:
        return False, outcome.note
    if not outcome.calls:
        return False, f"get_weather was never called; answer: {outcome.answer[:120]!r}"
    if WEATHER not in outcome.answer:
        return False, f"answer does not quote the tool result: {outcome.answer[:160]!r}"
    return True, f"{len(outcome.calls)} tool call(s), answer quotes the result"


def wire_summary() -> str:
    statuses = sorted({e.status for e in WIRE})
    text = f"{len(WIRE)} request(s), status {statuses}"
    threads = [json.loads(e.fields).get("thread") for e in WIRE if '"thread"' in e.fields]
    if threads:
        kinds = [t.get("type") if isinstance(t, dict) else t for t in threads]
        text += f", thread {kinds}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="ToolRelay's URL, without /v1")
    parser.add_argument(
        "--venv", default="main", help="run the cases of this venv (main, llama-index, instructor)"
    )
    parser.add_argument("--only", action="append", help="run only cases whose name has this")
    parser.add_argument("--skip", action="append", help="skip cases whose name has this")
    parser.add_argument("--traceback", action="store_true", help="print a failure's traceback")
    parser.add_argument("--wire", action="store_true", help="print every case's requests")
    args = parser.parse_args()
    base = args.base.rstrip("/")
    record_wire()
    failed = 0
    for item in CASES:
        if item.venv != args.venv:
            continue
        if args.only and not any(o.lower() in item.name.lower() for o in args.only):
            continue
        if args.skip and any(o.lower() in item.name.lower() for o in args.skip):
            continue
        CURRENT.__init__()  # one Outcome, reset, that get_weather reports to
        WIRE.clear()
        started = time.monotonic()
        try:
            item.run(base)
            ok, why = verdict(CURRENT)
        except Exception as exc:  # any failure is a finding, reported on its case's line
            ok, why = False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            if args.traceback:
                traceback.print_exc()
        failed += not ok
        seconds = time.monotonic() - started
        print(  # noqa: T201
            f"{item.name:<35} {version(item.package):<9} {'PASS' if ok else 'FAIL'}  "
            f"{item.api:<21} {item.line(base)}\n{'':<35} ({seconds:.1f}s) {why}; {wire_summary()}",
            flush=True,
        )
        if args.wire or not ok:
            for exchange in WIRE:
                print(f"{'':<37}{exchange}", flush=True)  # noqa: T201
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
