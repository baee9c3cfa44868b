"""Agent loops through the proxy read their prefix from the cache on every turn after the first
(CONTRACT.md, "Prompt caching"), on each kind, with the real openai and anthropic SDKs as
clients: chat, Responses (`previous_response_id`, and `store: false` with the whole history as
Codex sends it), and Claude Code's own Messages bodies with a billing line that changes on
every turn. The upstreams keep their caches as their providers document them
(tests/helpers/prompt_cache_double.py); what is asserted is what those caches counted: every
turn after the first reads most of its prompt, and the session's input cost (writes 1.25x,
reads 0.1x) is well under half of the uncached one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import orjson
import pytest

from app.main import create_app
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_upstream import Reply, anthropic_frames
from tests.helpers.prompt_cache_double import CachedUsage, anthropic_blocks, bedrock_blocks
from tests.helpers.prompt_cache_upstreams import CachingUpstreams
from tests.integration.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    make_config,
    raw_config,
    serve,
)

pytestmark = pytest.mark.anyio

TURNS = 6
MODELS = {"anthropic": "claude", "bedrock": "rock", "openai": "mini", "gemini": "gem"}
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
RECORDING = Path(__file__).parents[1] / "recordings" / "claude_code" / "tool_result_turn.json"
SYSTEM = "".join(f"Rule {n}: read the code before changing it; run the tests. " for n in range(180))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{n}",
            "description": f"Tool number {n}: does one careful thing to the working tree.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
    for n in range(20)
]


def _config() -> Any:
    raw = raw_config(openai_base="http://openai.upstream.test/v1")
    raw["providers"]["aws"] = {
        "kind": "bedrock",
        "region": "us-east-1",
        "base_url": "http://bedrock.test",
        "api_key": "bedrock-key",
    }
    raw["providers"]["gm"] = {
        "kind": "gemini",
        "base_url": "http://gemini.test",
        "api_key": GEMINI_KEY,
    }
    raw["models"] += [
        {"name": "rock", "provider": "aws", "model": BEDROCK_MODEL},
        {"name": "gem", "provider": "gm", "model": "gemini-2.5-flash"},
    ]
    return make_config(raw)


@asynccontextmanager
async def proxy(upstreams: CachingUpstreams) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(_config(), transport=httpx.MockTransport(upstreams)) as client:
        yield client


@asynccontextmanager
async def anthropic_sdk(upstreams: CachingUpstreams) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The anthropic SDK on the in-process app (the SDK speaks httpx2, not httpx)."""
    app = create_app(_config(), transport=httpx.MockTransport(upstreams))
    transport = httpx2.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx2.AsyncClient(transport=transport) as client:
        yield anthropic.AsyncAnthropic(
            base_url="http://toolrelay.test", api_key=CLIENT_KEY, http_client=client, max_retries=0
        )


def check_session(upstreams: CachingUpstreams, kind: str) -> None:
    counters = upstreams.caches[kind].counters
    assert len(counters.usages) == TURNS
    for turn in range(1, TURNS):
        assert counters.read_share(turn) > 0.5, (kind, turn, counters.usages)
    assert counters.cost() < 0.5 * counters.total, (kind, counters.usages)


def step(turn: int) -> str:
    return f"Step {turn}: now look at module_{turn}.py and tell me what it does. " * 4


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", list(MODELS))
async def test_chat_loop_reads_its_prefix(kind: str, stream: bool) -> None:
    upstreams = CachingUpstreams()
    async with proxy(upstreams) as client:
        sdk = openai.AsyncOpenAI(
            base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
        )
        messages: list[Any] = [{"role": "system", "content": SYSTEM}]
        for turn in range(TURNS):
            messages.append({"role": "user", "content": step(turn)})
            fields: dict[str, Any] = {"model": MODELS[kind], "messages": messages, "tools": TOOLS}
            if stream:
                chunks = await sdk.chat.completions.create(**fields, stream=True)
                answer = "".join(
                    [c.choices[0].delta.content or "" async for c in chunks if c.choices]
                )
            else:
                completion = await sdk.chat.completions.create(**fields)
                answer = completion.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": answer})
    check_session(upstreams, kind)


@pytest.mark.parametrize("stored", [True, False], ids=["previous_response_id", "store-false"])
@pytest.mark.parametrize("kind", list(MODELS))
async def test_responses_loop_reads_its_prefix(kind: str, stored: bool) -> None:
    upstreams = CachingUpstreams()
    tools = [{"type": "function", **tool["function"]} for tool in TOOLS]
    async with proxy(upstreams) as client:
        sdk = openai.AsyncOpenAI(
            base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
        )
        history: list[Any] = []
        previous: str | None = None
        for turn in range(TURNS):
            said = {"type": "message", "role": "user", "content": step(turn)}
            fields: dict[str, Any] = {"model": MODELS[kind], "instructions": SYSTEM, "tools": tools}
            if stored:
                response = await sdk.responses.create(
                    **fields,
                    input=[said],
                    **({"previous_response_id": previous} if previous else {}),
                )
                previous = response.id
            else:
                history.append(said)
                response = await sdk.responses.create(**fields, input=history, store=False)
                history += [item.model_dump(exclude_none=True) for item in response.output]
    check_session(upstreams, kind)


def claude_code_turns() -> list[dict[str, Any]]:
    """Claude Code's request bodies for TURNS turns: its recorded system, tools and history,
    a billing line whose hash changes every turn, and its breakpoint on the last user block."""
    recorded = orjson.loads(RECORDING.read_bytes())["body"]
    messages = recorded["messages"]
    bodies = []
    for turn in range(TURNS):
        body = orjson.loads(orjson.dumps(recorded))
        body["system"][0]["text"] = (
            f"x-anthropic-billing-header: cc_version=2.1.40.abc; cch={turn:05x};"
        )
        body["messages"] = orjson.loads(orjson.dumps(messages))
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                block.pop("cache_control", None)
        last = body["messages"][-1]["content"][-1]
        last["cache_control"] = {"type": "ephemeral"}
        bodies.append(body)
        messages = [
            *messages,
            {"role": "assistant", "content": [{"type": "text", "text": f"Done with turn {turn}."}]},
            {"role": "user", "content": [{"type": "text", "text": step(turn)}]},
        ]
    return bodies


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", list(MODELS))
async def test_claude_code_loop_reads_its_prefix(kind: str, stream: bool) -> None:
    upstreams = CachingUpstreams()
    async with anthropic_sdk(upstreams) as sdk:
        for body in claude_code_turns():
            known = {name: body.pop(name) for name in ("system", "messages", "tools", "max_tokens")}
            body.pop("model")
            body.pop("stream", None)
            fields = {**known, "model": MODELS[kind], "extra_body": body, "timeout": 60}
            if stream:
                async with sdk.messages.stream(**fields) as events:
                    await events.get_final_message()
            else:
                await sdk.messages.create(**fields)
    check_session(upstreams, kind)


async def test_with_prompt_cache_off_the_same_loop_reads_nothing() -> None:
    """The check above is not vacuous: without ToolRelay's breakpoints Anthropic's cache (as
    documented) reads nothing."""
    upstreams = CachingUpstreams()
    raw = raw_config(openai_base="http://openai.upstream.test/v1")
    for model in raw["models"]:
        if model["name"] == "claude":
            model["prompt_cache"] = "off"
    async with serve(make_config(raw), transport=httpx.MockTransport(upstreams)) as client:
        sdk = openai.AsyncOpenAI(
            base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
        )
        messages: list[Any] = [{"role": "system", "content": SYSTEM}]
        for turn in range(TURNS):
            messages.append({"role": "user", "content": step(turn)})
            completion = await sdk.chat.completions.create(
                model="claude", messages=messages, tools=TOOLS
            )
            messages.append({"role": "assistant", "content": completion.choices[0].message.content})
    assert upstreams.caches["anthropic"].counters.read == 0


def tool_turns(turns: int) -> list[Any]:
    """A chat history of `turns` tool rounds, with ids other upstreams give (`functions.x:0`,
    which anthropic and bedrock must map) and a call to every other tool."""
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": step(0)},
    ]
    for turn in range(turns):
        call_id = f"functions.tool_{turn}:{turn}"
        call = {"name": f"tool_{turn}", "arguments": orjson.dumps({"path": f"m{turn}.py"}).decode()}
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": f"contents of m{turn}.py " * 20},
        ]
    return messages


def prompt_units(kind: str, raw: bytes) -> list[bytes]:
    """The upstream prompt as the provider caches it, marks left out: blocks in the order
    tools, system, messages (explicit kinds), or the serialised items (automatic ones)."""
    body = orjson.loads(raw)
    if kind == "anthropic":
        return [block for block, _ in anthropic_blocks(body)]
    if kind == "bedrock":
        return [block for block, _ in bedrock_blocks(body)]
    items = body["messages"] if kind == "openai" else body["contents"]
    head = [orjson.dumps(body.get("tools")), orjson.dumps(body.get("systemInstruction"))]
    return head + [orjson.dumps(item) for item in items]


@pytest.mark.parametrize("kind", list(MODELS))
async def test_upstream_bodies_are_byte_stable_and_turn_n_is_a_prefix_of_turn_n_plus_1(
    kind: str,
) -> None:
    upstreams = CachingUpstreams()
    async with proxy(upstreams) as client:
        sdk = openai.AsyncOpenAI(
            base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
        )
        for messages in (tool_turns(3), tool_turns(3), tool_turns(4)):
            await sdk.chat.completions.create(model=MODELS[kind], messages=messages, tools=TOOLS)
    first, again, later = upstreams.bodies[kind]
    assert again == first
    turn_n, turn_n1 = prompt_units(kind, first), prompt_units(kind, later)
    assert turn_n1[: len(turn_n)] == turn_n


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_scripted_mock_with_the_cache_plugged_in_reports_reads_to_the_chat_client(
    stream: bool,
) -> None:
    """The double as an option of the existing mocks (MockUpstream.cache): MockAnthropic over
    real HTTP, its answers' usage from the cache; the chat client sees the reads."""
    with MockAnthropic(ANTHROPIC_KEY) as claude:
        claude.cache = CachedUsage("anthropic")
        answer = anthropic_message([{"type": "text", "text": "Done."}], "end_turn")
        for _ in range(TURNS):
            if stream:
                claude.answer(Reply(frames=anthropic_frames(message_events(answer))))
            else:
                claude.answer(Reply(json=answer))
        async with serve(make_config(raw_config(anthropic_base=claude.base_url))) as client:
            sdk = openai.AsyncOpenAI(
                base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
            )
            messages: list[Any] = [{"role": "system", "content": SYSTEM}]
            cached = []
            for turn in range(TURNS):
                messages.append({"role": "user", "content": step(turn)})
                fields: dict[str, Any] = {"model": "claude", "messages": messages, "tools": TOOLS}
                if stream:
                    chunks = await sdk.chat.completions.create(
                        **fields, stream=True, stream_options={"include_usage": True}
                    )
                    usage = [chunk.usage async for chunk in chunks if chunk.usage][-1]
                else:
                    usage = (await sdk.chat.completions.create(**fields)).usage
                assert usage is not None
                assert usage.prompt_tokens_details is not None
                cached.append(usage.prompt_tokens_details.cached_tokens)
                messages.append({"role": "assistant", "content": "Done."})
    assert cached == [usage.read for usage in claude.cache.counters.usages]
    assert cached[0] == 0
    assert all(reads > 0 for reads in cached[1:])


@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_a_chat_clients_billing_line_never_reaches_an_automatic_cache(kind: str) -> None:
    """A chat client relaying Claude Code (claude-code-router and the like) keeps its billing
    line at the top of the system message, its hash new every turn: left in, the automatic
    caches (longest shared prefix) would read nothing."""
    upstreams = CachingUpstreams()
    async with proxy(upstreams) as client:
        sdk = openai.AsyncOpenAI(
            base_url="http://toolrelay.test/v1", api_key=CLIENT_KEY, http_client=client
        )
        messages: list[Any] = []
        for turn in range(TURNS):
            billing = f"x-anthropic-billing-header: cc_version=2.1.197; cch={turn:05x};\n"
            system = {"role": "system", "content": billing + SYSTEM}
            messages.append({"role": "user", "content": step(turn)})
            completion = await sdk.chat.completions.create(
                model=MODELS[kind], messages=[system, *messages], tools=TOOLS
            )
            messages.append({"role": "assistant", "content": completion.choices[0].message.content})
    check_session(upstreams, kind)
    for body in upstreams.bodies[kind]:
        assert b"x-anthropic-billing-header" not in body
