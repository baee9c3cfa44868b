"""The hosted `mcp` tool's test doubles and checks (tests/e2e/test_hosted_mcp_sdk.py,
tests/integration/test_hosted_mcp*.py): an upstream of each kind scripted like a model (call
the MCP tools in SCRIPT until a tool result is in the conversation, then answer "RESULT:
<result>"), an MCP server wrapper that records what reached it, and the checks every
Responses stream of the loop must pass."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.conformance.spec import check_response_event
from tests.helpers.codex_upstreams import tool_result
from tests.helpers.mcp_servers import free_port, http_app, serve
from tests.helpers.mock_anthropic import (
    MockAnthropic,
    issued_thinking,
    message,
    message_events,
    thinking_block,
)
from tests.helpers.mock_gemini import MockGemini, gemini_answer, issued_signatures
from tests.helpers.mock_upstream import (
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import make_config, raw_config
from tests.integration.conftest import serve as serve_proxy

TOOLS = ["add", "echo", "fail", "slow", "pid", "header"]
# Input tokens per round as each double reports them (usage is summed over rounds).
ROUND_INPUT = {"mini": 10, "claude": 120, "gem": 82}


@dataclass
class Script:
    """What every scripted model does: call these functions (upstream names) until a tool
    result is in the conversation, then answer "RESULT: <result>". `persist` (the openai
    kind): call them again every round they are still offered (a model that never stops)."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    persist: bool = False
    fail_after_result: bool = False  # the openai kind: a 500 once a tool result is in
    say: str = ""  # the openai kind: text before its calls

    def reset(self) -> None:
        self.calls, self.persist, self.fail_after_result, self.say = [], False, False, ""


SCRIPT = Script()


def answer_text(result: str) -> str:
    return f"RESULT: {result}"


def openai_reply(exchange: Exchange) -> Reply:
    body = exchange.body
    result = tool_result(body["messages"])
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if result is not None and SCRIPT.fail_after_result:
        return Reply(500, json={"error": {"message": "upstream broke", "type": "server_error"}})
    if not _calling(body, result):
        chunks = openai_text_chunks(answer_text(str(result)))
    else:
        calls = [
            {"index": i, "id": f"call_{i}", "type": "function"}
            | {"function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(SCRIPT.calls)
        ]
        chunks = openai_text_chunks(*([SCRIPT.say] if SCRIPT.say else []))
        delta = {"index": 0, "delta": {"tool_calls": calls}}
        chunks.insert(len(chunks) - 1, chunks[1] | {"choices": [delta]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
    if body.get("stream"):
        return Reply(frames=openai_frames([*chunks, chunks[0] | {"choices": [], "usage": usage}]))
    return Reply(json=_whole_completion(chunks, usage))


def _calling(body: dict[str, Any], result: str | None) -> bool:
    if SCRIPT.persist:
        names = {tool["function"]["name"] for tool in body.get("tools") or ()}
        return bool(SCRIPT.calls) and all(name in names for name, _ in SCRIPT.calls)
    return result is None and bool(SCRIPT.calls)


def _whole_completion(chunks: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    """The chunks as one chat.completion (what a non-stream request gets)."""
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    calls = [
        {key: value for key, value in call.items() if key != "index"}
        for c in chunks
        for call in c["choices"][0]["delta"].get("tool_calls") or ()
    ]
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = calls
    finish = chunks[-1]["choices"][0]["finish_reason"]
    choice = {"index": 0, "message": msg, "finish_reason": finish}
    return {**chunks[0], "object": "chat.completion", "choices": [choice], "usage": usage}


class ScriptedOpenAI(MockUpstream):
    def __init__(self) -> None:
        super().__init__(screen=openai_reply)


class ScriptedAnthropic(MockAnthropic):
    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        result = tool_result(exchange.body["messages"])
        if result is not None or not SCRIPT.calls:
            whole = message([{"type": "text", "text": answer_text(str(result))}], "end_turn")
        else:
            uses = [
                {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
                for i, (name, args) in enumerate(SCRIPT.calls)
            ]
            whole = message(uses, "tool_use")
        if (exchange.body.get("thinking") or {}).get("type") == "enabled":
            whole["content"].insert(0, thinking_block(f"Thinking about {len(self.exchanges)}."))
        reply = (
            Reply(frames=anthropic_frames(message_events(whole)))
            if exchange.body.get("stream")
            else Reply(json=whole)
        )
        self.issued.update(issued_thinking(reply))
        return reply


class ScriptedGemini(MockGemini):
    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        result = tool_result(exchange.body["contents"])
        parts: list[dict[str, Any]]
        if result is not None or not SCRIPT.calls:
            parts = [{"text": answer_text(result or "")}]
        else:
            parts = [
                {"functionCall": {"name": name, "args": args}, "thoughtSignature": "U2lnbmVk"}
                for name, args in SCRIPT.calls
            ]
        answer = gemini_answer(parts)
        reply = Reply(frames=[Frame(answer)]) if "stream" in exchange.path else Reply(json=answer)
        self.issued.update(issued_signatures(reply))
        return reply


class Recording:
    """An MCP server app that notes each request's JSON-RPC method and headers (the tests
    count tools/list and tools/call on the server's side, and see what headers arrived)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: list[str] = []
        self.headers: list[dict[str, str]] = []

    def count(self, method: str) -> int:
        return self.methods.count(method)

    def listings(self) -> int:
        """tools/list requests made to list the server, not those the mcp SDK's client makes
        right after a tools/call on a fresh connection (to check the result against the
        tool's output schema: app/mcp's, reported)."""
        made = [m for m in self.methods if m in ("tools/list", "tools/call")]
        return sum(
            1
            for i, method in enumerate(made)
            if method == "tools/list" and (i == 0 or made[i - 1] != "tools/call")
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})

        async def spy() -> Any:
            got = await receive()
            if got["type"] == "http.request" and got.get("body"):
                with contextlib.suppress(ValueError, AttributeError):
                    self.methods.append(json.loads(got["body"]).get("method"))
            return got

        await self.app(scope, spy, send)


def dead_url() -> str:
    """An address nothing listens on (a server that cannot be listed)."""
    return f"http://127.0.0.1:{free_port()}/mcp"


def wire(value: Any) -> Any:
    """An event as it came: without the `parsed` the SDK's stream adds to output_text parts."""
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items() if not (k == "parsed" and v is None)}
    if isinstance(value, list):
        return [wire(v) for v in value]
    return value


def check_events(events: list[dict[str, Any]], final: dict[str, Any]) -> None:
    """OpenAI's shapes; sequence_number +1 from 0; one response.created, first, and one
    terminal event, last; every event's output_index and item_id those its item was added
    with, the indices in order and the final output those items."""
    types = [event["type"] for event in events]
    assert types[0] == "response.created"
    assert types.count("response.created") == 1
    terminal = [kind for kind in types if kind in TERMINAL]
    assert terminal == [types[-1]], types
    places: dict[int, str] = {}
    for number, event in enumerate(events):
        check_response_event(event)
        assert event["sequence_number"] == number, (number, event)
        index = event.get("output_index")
        if event["type"] == "response.output_item.added":
            assert index == len(places), event
            places[index] = event["item"]["id"]
        elif event["type"] == "response.output_item.done":
            assert places[index] == event["item"]["id"], event
        elif "item_id" in event:
            assert places[index] == event["item_id"], event
    assert [item["id"] for item in final["output"]] == [places[i] for i in sorted(places)]


TERMINAL = {"response.completed", "response.failed", "response.incomplete"}


def offered(model: str, body: dict[str, Any]) -> list[str]:
    if model == "gem":
        return [d["name"] for tool in body["tools"] for d in tool.get("functionDeclarations", ())]
    if model == "claude":
        return [tool["name"] for tool in body["tools"]]
    return [tool["function"]["name"] for tool in body["tools"]]


def told(model: str, body: dict[str, Any], name: str) -> tuple[list[str], str | None]:
    """The calls the model made and the result it was given, in its own kind's shape."""
    if model == "gem":
        parts = [part for content in body["contents"] for part in content["parts"]]
        calls = [part["functionCall"]["name"] for part in parts if "functionCall" in part]
        answers = [part["functionResponse"] for part in parts if "functionResponse" in part]
        assert all(found["name"] == name for found in answers)
        return calls, tool_result(body["contents"])
    if model == "claude":
        blocks = [
            block
            for msg in body["messages"]
            if isinstance(msg["content"], list)
            for block in msg["content"]
        ]
        calls = [block["name"] for block in blocks if block["type"] == "tool_use"]
        return calls, tool_result(body["messages"])
    calls = [
        call["function"]["name"] for msg in body["messages"] for call in msg.get("tool_calls") or ()
    ]
    return calls, tool_result(body["messages"])


# --- the in-process tests' world (tests/integration/test_hosted_mcp*.py) ------------------------


@dataclass
class Servers:
    """What the in-process tests run against: the `calc` server and the upstream."""

    calc: Recording
    url: str
    upstream: ScriptedOpenAI

    def bodies(self) -> list[Any]:
        return [exchange.body for exchange in self.upstream.exchanges]


@contextmanager
def mcp_world() -> Iterator[Servers]:
    """A recording MCP server and a scripted openai-kind upstream (a module's fixture)."""
    calc = Recording(http_app("stateless"))
    with serve(calc) as url, ScriptedOpenAI() as upstream:
        yield Servers(calc, url, upstream)


def fresh(servers: Servers) -> Servers:
    """`servers` with nothing recorded and the script reset (each test's fixture)."""
    servers.upstream.reset()
    servers.calc.methods.clear()
    servers.calc.headers.clear()
    SCRIPT.reset()
    return servers


@asynccontextmanager
async def proxy(world: Servers, **mcp: Any) -> AsyncIterator[httpx.AsyncClient]:
    """The app in process: `calc` (approval never), `broken` (nothing listens), calc's
    host allowed as a remote URL; `mcp`: more of the section."""
    raw = raw_config(openai_base=f"{world.upstream.base_url}/v1")
    raw["mcp"] = {
        "servers": {
            "calc": {"url": world.url, "require_approval": "never"},
            "broken": {"url": dead_url()},
        },
        "remote_urls": [world.url.rsplit("/", 1)[0] + "/*"],
        **mcp,
    }
    async with serve_proxy(make_config(raw)) as client:
        yield client


def calc(**more: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "calc", **more}


async def create(client: httpx.AsyncClient, stream: bool, **request: Any) -> httpx.Response:
    body = {"model": "mini", "input": "go", "tools": [calc()], **request}
    return await client.post("/v1/responses", json={**body, "stream": stream})


def final(answer: httpx.Response) -> dict[str, Any]:
    """The response: the body, or a stream's terminal event's (its events checked)."""
    assert answer.status_code == 200, answer.text
    if not answer.headers["content-type"].startswith("text/event-stream"):
        body: dict[str, Any] = answer.json()
        return body
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line[:6] == "data: "]
    check_events(events, events[-1]["response"])
    response: dict[str, Any] = events[-1]["response"]
    return response


def kinds(response: dict[str, Any]) -> list[str]:
    return [item["type"] for item in response["output"]]
