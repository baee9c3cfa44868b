"""Run a one-tool agent loop in each popular framework against ToolRelay's offline `demo` model,
changing only the framework's base URL, and print one line per framework: name, version,
PASS/FAIL, and the one line of code that points it at ToolRelay.

A run passes when the framework called `get_weather` (the demo calls offered tools) and came
back with a final answer that quotes the tool's result. Loops that need a final-answer tool
(smolagents' final_answer) are capped at MAX_TURNS steps: under `tool_choice: required` the demo
calls the offered tool not yet called, else the last (usually the final-answer one), so such a
loop should end, and passes when it ends through that tool after calling `get_weather` (its
answer is then sampled from the final tool's schema, so it is not judged); if it does not end,
that is reported as found, not papered over.

The structured-output cases (name ending in "-> Recipe") ask each framework for a pydantic
`Recipe` in the ways it offers (an output tool, `response_format` json_schema, json_object) and
pass when the framework hands back a `Recipe` instance. On the demo, `json_object` answers
`{"answer": TEXT}` (the schema of those modes lives only in the prompt, which the demo does not
read), so those modes are run to show the request goes through but are expected to fail parsing
offline (XFAIL, not counted as failures); `--skip json_object` leaves them out.

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
from typing import Any, Literal

from pydantic import BaseModel, Field

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
    parsed: Any = None  # a structured-output case's result
    structured: bool = False  # whether the case asked for a Recipe (the verdict checks `parsed`)
    ended: str = ""  # how a loop with a final-answer tool ended (then the answer is not judged)


class Step(BaseModel):
    title: str
    minutes: int = Field(ge=1, le=60)


class Recipe(BaseModel):
    """A recipe: what a structured-output case asks the framework for."""

    name: str
    difficulty: Literal["easy", "hard"]
    steps: list[Step]


RECIPE_QUESTION = "Give me a pancake recipe."


def got(parsed: Any) -> None:
    """A structured-output case's result, for the verdict."""
    CURRENT.structured = True
    CURRENT.parsed = parsed


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
    text = body.get("text")
    response_format = body.get("response_format") or (
        text.get("format") if isinstance(text, dict) else None
    )
    if isinstance(response_format, dict):
        shown["format"] = response_format.get("type")
    if isinstance(body.get("tools"), list):
        shown["tools"] = [
            (t.get("function") or t).get("name") for t in body["tools"] if isinstance(t, dict)
        ]
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
    xfail: str = ""  # why the demo cannot pass it: a failure is XFAIL, not counted


CASES: list[Case] = []

JSON_OBJECT_OFFLINE = "json_object's schema is only in the prompt; the demo answers {answer: ...}"


def case(
    name: str,
    package: str,
    api: str,
    line: Callable[[str], str],
    venv: str = "main",
    xfail: str = "",
):
    def register(run: Callable[[str], None]) -> Callable[[str], None]:
        CASES.append(Case(name, package, line, run, api, venv, xfail))
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


def _pydantic_ai_structured(base: str, model_class: str, how: str, tools: bool = False) -> None:
    import pydantic_ai
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.models import openai as models
    from pydantic_ai.providers.openai import OpenAIProvider

    model = getattr(models, model_class)(
        MODEL, provider=OpenAIProvider(base_url=f"{base}/v1", api_key=KEY)
    )
    # "tool": the default, an output tool (`final_result`) the model must call;
    # "native": NativeOutput, `response_format` json_schema (Chat) / `text.format` (Responses)
    output_type: Any = Recipe if how == "tool" else pydantic_ai.NativeOutput(Recipe)
    agent = Agent(model, output_type=output_type, tools=[get_weather] if tools else [])
    question = f"{QUESTION} Then {RECIPE_QUESTION}" if tools else RECIPE_QUESTION
    result = agent.run_sync(question, usage_limits=UsageLimits(request_limit=MAX_TURNS))
    if tools and not CURRENT.calls:
        CURRENT.note = "get_weather was never called before the output tool"
    got(result.output)


def _pydantic_ai_line(model_class: str, output: str) -> Callable[[str], str]:
    return lambda b: (
        f'Agent({model_class}("demo", provider=OpenAIProvider(base_url="{b}/v1", api_key="x")), '
        f"output_type={output})"
    )


@case(
    "pydantic-ai (Chat) output tool -> Recipe",
    "pydantic-ai-slim",
    "/v1/chat/completions",
    _pydantic_ai_line("OpenAIChatModel", "Recipe"),
)
def pydantic_ai_chat_output_tool(base: str) -> None:
    _pydantic_ai_structured(base, "OpenAIChatModel", "tool")


@case(
    "pydantic-ai (Chat) tool + output tool -> Recipe",
    "pydantic-ai-slim",
    "/v1/chat/completions",
    _pydantic_ai_line("OpenAIChatModel", "Recipe"),
)
def pydantic_ai_chat_tool_then_output_tool(base: str) -> None:
    _pydantic_ai_structured(base, "OpenAIChatModel", "tool", tools=True)


@case(
    "pydantic-ai (Chat) NativeOutput -> Recipe",
    "pydantic-ai-slim",
    "/v1/chat/completions",
    _pydantic_ai_line("OpenAIChatModel", "NativeOutput(Recipe)"),
)
def pydantic_ai_chat_native(base: str) -> None:
    _pydantic_ai_structured(base, "OpenAIChatModel", "native")


@case(
    "pydantic-ai (Responses) output tool -> Recipe",
    "pydantic-ai-slim",
    "/v1/responses",
    _pydantic_ai_line("OpenAIResponsesModel", "Recipe"),
)
def pydantic_ai_responses_output_tool(base: str) -> None:
    _pydantic_ai_structured(base, "OpenAIResponsesModel", "tool")


@case(
    "pydantic-ai (Responses) NativeOutput -> Recipe",
    "pydantic-ai-slim",
    "/v1/responses",
    _pydantic_ai_line("OpenAIResponsesModel", "NativeOutput(Recipe)"),
)
def pydantic_ai_responses_native(base: str) -> None:
    _pydantic_ai_structured(base, "OpenAIResponsesModel", "native")


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


def _langchain_structured(base: str, method: str | None) -> None:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=f"{base}/v1", api_key=KEY, model=MODEL)
    structured = (
        llm.with_structured_output(Recipe)
        if method is None
        else llm.with_structured_output(Recipe, method=method)  # type: ignore[arg-type]
    )
    got(structured.invoke(RECIPE_QUESTION))


def _langchain_line(method: str | None) -> Callable[[str], str]:
    extra = "" if method is None else f', method="{method}"'
    return lambda b: (
        f'ChatOpenAI(base_url="{b}/v1", api_key="x", model="demo")'
        f".with_structured_output(Recipe{extra})"
    )


@case(
    "langchain-openai default -> Recipe",
    "langchain-openai",
    "/v1/chat/completions",
    _langchain_line(None),
)
def langchain_structured_default(base: str) -> None:
    _langchain_structured(base, None)


@case(
    "langchain-openai json_schema -> Recipe",
    "langchain-openai",
    "/v1/chat/completions",
    _langchain_line("json_schema"),
)
def langchain_structured_json_schema(base: str) -> None:
    _langchain_structured(base, "json_schema")


@case(
    "langchain-openai function_calling -> Recipe",
    "langchain-openai",
    "/v1/chat/completions",
    _langchain_line("function_calling"),
)
def langchain_structured_function_calling(base: str) -> None:
    _langchain_structured(base, "function_calling")


@case(
    "langchain-openai json_mode (json_object) -> Recipe",
    "langchain-openai",
    "/v1/chat/completions",
    _langchain_line("json_mode"),
    xfail=JSON_OBJECT_OFFLINE,
)
def langchain_structured_json_mode(base: str) -> None:
    _langchain_structured(base, "json_mode")


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


def _instructor_structured(base: str, mode: str) -> None:
    import instructor
    from openai import OpenAI

    client = instructor.from_openai(
        OpenAI(base_url=f"{base}/v1", api_key=KEY), mode=getattr(instructor.Mode, mode)
    )
    got(
        client.chat.completions.create(
            model=MODEL,
            response_model=Recipe,
            messages=[{"role": "user", "content": RECIPE_QUESTION}],
            max_retries=0,
        )
    )


def _instructor_line(mode: str) -> Callable[[str], str]:
    return lambda b: (
        f'instructor.from_openai(OpenAI(base_url="{b}/v1", api_key="x"), '
        f"mode=instructor.Mode.{mode})"
    )


@case(
    "instructor JSON_SCHEMA -> Recipe",
    "instructor",
    "/v1/chat/completions",
    _instructor_line("JSON_SCHEMA"),
    venv="instructor",
)
def instructor_json_schema(base: str) -> None:
    _instructor_structured(base, "JSON_SCHEMA")


@case(
    "instructor TOOLS -> Recipe",
    "instructor",
    "/v1/chat/completions",
    _instructor_line("TOOLS"),
    venv="instructor",
)
def instructor_tools_structured(base: str) -> None:
    _instructor_structured(base, "TOOLS")


@case(
    "instructor JSON (json_object) -> Recipe",
    "instructor",
    "/v1/chat/completions",
    _instructor_line("JSON"),
    venv="instructor",
    xfail=JSON_OBJECT_OFFLINE,
)
def instructor_json(base: str) -> None:
    _instructor_structured(base, "JSON")


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
    # The loop ended through final_answer; its `answer` is a string the demo sampled from
    # final_answer's schema, which need not quote the tool's result.
    CURRENT.answer = str(answer)
    CURRENT.ended = f"final_answer after {len(steps)} step(s) (answer {CURRENT.answer[:60]!r})"


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


def _agents_structured(base: str, chat: bool, stream: bool = False) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=f"{base}/v1", api_key=KEY)
    model_class = OpenAIChatCompletionsModel if chat else OpenAIResponsesModel
    model = model_class(model=MODEL, openai_client=client)
    agent = Agent(
        name="cook", instructions="Answer with a recipe.", model=model, output_type=Recipe
    )

    async def run() -> Any:
        if not stream:
            return (await Runner.run(agent, RECIPE_QUESTION, max_turns=MAX_TURNS)).final_output
        streamed = Runner.run_streamed(agent, RECIPE_QUESTION, max_turns=MAX_TURNS)
        async for _ in streamed.stream_events():
            pass
        return streamed.final_output

    got(asyncio.run(run()))


@case(
    "openai-agents (Responses) output_type -> Recipe",
    "openai-agents",
    "/v1/responses",
    lambda b: (
        "Agent(..., output_type=Recipe); set_default_openai_client(AsyncOpenAI(base_url="
        f'"{b}/v1", api_key="x"))'
    ),
)
def agents_responses_structured(base: str) -> None:
    _agents_structured(base, chat=False)


@case(
    "openai-agents (Responses, stream) output_type -> Recipe",
    "openai-agents",
    "/v1/responses",
    lambda b: (
        "Agent(..., output_type=Recipe); set_default_openai_client(AsyncOpenAI(base_url="
        f'"{b}/v1", api_key="x"))'
    ),
)
def agents_responses_stream_structured(base: str) -> None:
    _agents_structured(base, chat=False, stream=True)


@case(
    "openai-agents (Chat) output_type -> Recipe",
    "openai-agents",
    "/v1/chat/completions",
    lambda b: (
        'Agent(..., output_type=Recipe, model=OpenAIChatCompletionsModel(model="demo", '
        f'openai_client=AsyncOpenAI(base_url="{b}/v1", api_key="x")))'
    ),
)
def agents_chat_structured(base: str) -> None:
    _agents_structured(base, chat=True)


# --- running --------------------------------------------------------------------------------


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def structured_verdict(outcome: Outcome) -> tuple[bool, str]:
    if not isinstance(outcome.parsed, Recipe):
        return False, f"not a Recipe: {type(outcome.parsed).__name__} {outcome.parsed!r:.160}"
    calls = f", after {len(outcome.calls)} tool call(s)" if outcome.calls else ""
    return True, f"a Recipe, {len(outcome.parsed.steps)} step(s){calls}"


def verdict(outcome: Outcome) -> tuple[bool, str]:
    if outcome.note:
        return False, outcome.note
    if outcome.structured:
        return structured_verdict(outcome)
    if outcome.ended and outcome.calls:
        return True, f"{len(outcome.calls)} tool call(s), then {outcome.ended}"
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
        mark = "PASS" if ok else "XFAIL" if item.xfail else "FAIL"
        if not ok and item.xfail:
            why = f"expected offline ({item.xfail}): {why}"
        failed += mark == "FAIL"
        seconds = time.monotonic() - started
        print(  # noqa: T201
            f"{item.name:<35} {version(item.package):<9} {mark:<4}  "
            f"{item.api:<21} {item.line(base)}\n{'':<35} ({seconds:.1f}s) {why}; {wire_summary()}",
            flush=True,
        )
        if args.wire or mark == "FAIL":
            for exchange in WIRE:
                print(f"{'':<37}{exchange}", flush=True)  # noqa: T201
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
