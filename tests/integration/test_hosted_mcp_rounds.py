"""The hosted `mcp` tool's rounds (CONTRACT.md, "MCP"), in process as test_hosted_mcp.py: the
tokens of every round counted, MCP names offered as valid function names, a later round
failing, max_tool_calls, a native Responses upstream, text before a call, and Claude's
thinking carried through rounds and approvals."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from tests.helpers.hosted_mcp import (
    SCRIPT,
    ScriptedAnthropic,
    Servers,
    calc,
    check_events,
    create,
    final,
    fresh,
    kinds,
    mcp_world,
    proxy,
)
from tests.helpers.mcp_servers import serve
from tests.integration.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    assert_error,
    make_config,
    raw_config,
)
from tests.integration.conftest import serve as serve_proxy
from tests.integration.test_team_signals import samples, value

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with mcp_world() as running:
        yield running


@pytest.fixture
def world(servers: Servers) -> Servers:
    return fresh(servers)


STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])


@STREAMS
async def test_every_rounds_tokens_are_counted(world: Servers, stream: bool) -> None:
    """The key's token limits, the metrics and the log line count all the rounds' tokens,
    not the last round's (each round: 10 prompt, 5 completion)."""
    SCRIPT.calls, SCRIPT.persist = [("calc__add", {"a": 1, "b": 1})], True
    async with proxy(world, max_rounds=2) as client:
        response = final(await create(client, stream))
        found = samples((await client.get("/metrics")).text)
    assert response["usage"]["input_tokens"] == 30
    labels = {"model": "mini", "provider": "oa", "key": "default"}
    assert value(found, "toolrelay_tokens_total", **labels, type="prompt") == 30
    assert value(found, "toolrelay_tokens_total", **labels, type="completion") == 15


FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""A function name every kind takes: OpenAI's and Anthropic's `^[a-zA-Z0-9_-]{1,64}$`,
starting as Gemini's must."""
LONG = "summarize_the_pull_request_review_comments_of_a_repository"


def odd_names_app() -> Any:
    """MCP names are looser than function names: dots, and any length."""
    server = MCPServer("odd")

    @server.tool(name="math.add", description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(name=LONG, description="Long.")
    def long() -> str:
        return "long"

    return server.streamable_http_app(stateless_http=True, json_response=True)


async def test_mcp_names_are_offered_as_valid_function_names(world: Servers) -> None:
    with serve(odd_names_app()) as url:
        tool = {"type": "mcp", "server_label": "my.remote", "server_url": url}
        tool["require_approval"] = "never"
        async with proxy(world, remote_urls=[url]) as client:
            SCRIPT.calls = []
            await create(client, False, tools=[tool])
            names = [t["function"]["name"] for t in world.bodies()[0]["tools"]]
            assert len(names) == 2
            assert all(FUNCTION_NAME.fullmatch(name) for name in names), names
            SCRIPT.calls = [(names[0], {"a": 2, "b": 3}), (names[1], {})]
            first = final(await create(client, False, tools=[tool]))
            second = final(
                await create(client, False, tools=[tool], previous_response_id=first["id"])
            )
    assert [(i["name"], i["output"]) for i in first["output"][1:3]] == [
        ("math.add", "5"),
        (LONG, "long"),
    ]
    assert kinds(second) == ["message"]
    replayed = [
        call["function"]["name"]
        for message in world.bodies()[-1]["messages"]
        for call in message.get("tool_calls") or ()
    ]
    assert replayed == names  # the conversation's calls under the names they were offered


@STREAMS
async def test_a_later_round_failing(world: Servers, stream: bool) -> None:
    """Round 1 ran the tool; round 2's upstream fails: a whole answer is the error, a stream
    (already 200) ends with one response.failed after the call's events."""
    SCRIPT.calls, SCRIPT.fail_after_result = [("calc__add", {"a": 2, "b": 3})], True
    async with proxy(world) as client:
        answer = await create(client, stream)
    if not stream:
        assert assert_error(answer, 502)["type"] == "server_error"
        return
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line[:6] == "data: "]
    response = events[-1]["response"]
    check_events(events, response)
    assert events[-1]["type"] == "response.failed"
    assert kinds(response) == ["mcp_list_tools", "mcp_call"]
    assert response["output"][1]["output"] == "5"


async def test_max_tool_calls_caps_the_calls_run(world: Servers) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3}), ("calc__echo", {"text": "hi"})]
    SCRIPT.persist = True
    async with proxy(world) as client:
        response = final(await create(client, False, max_tool_calls=1))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    assert world.calc.count("tools/call") == 1
    second = world.bodies()[1]
    assert "tools" not in second  # withdrawn once the cap was reached
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert results == ["5", "Not run: this response's max_tool_calls was reached."]


async def test_a_native_responses_upstream_gets_the_loops_chat_requests(world: Servers) -> None:
    """`responses: native` relays /v1/responses as sent, but a request with mcp tools is run
    by ToolRelay: the upstream only sees chat completions with the tools as functions."""
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    raw = raw_config(openai_base=f"{world.upstream.base_url}/v1")
    raw["providers"]["oa"]["responses"] = "native"
    raw["mcp"] = {"servers": {"calc": {"url": world.url, "require_approval": "never"}}}
    async with serve_proxy(make_config(raw)) as client:
        response = final(await create(client, True))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    assert {exchange.path for exchange in world.upstream.exchanges} == {"/v1/chat/completions"}


@STREAMS
async def test_text_before_the_call_is_its_own_message(world: Servers, stream: bool) -> None:
    SCRIPT.calls, SCRIPT.say = [("calc__add", {"a": 2, "b": 3})], "Let me add."
    async with proxy(world) as client:
        response = final(await create(client, stream))
    assert kinds(response) == ["mcp_list_tools", "message", "mcp_call", "message"]
    texts = [item["content"][0]["text"] for item in response["output"] if item["type"] == "message"]
    assert texts == ["Let me add.", "RESULT: 5"]
    said = world.bodies()[1]["messages"][1]
    assert (said["role"], said["content"]) == ("assistant", "Let me add.")
    assert [call["function"]["name"] for call in said["tool_calls"]] == ["calc__add"]


@STREAMS
async def test_claudes_thinking_goes_back_with_its_calls(world: Servers, stream: bool) -> None:
    """With thinking on, Anthropic refuses a tool_use turn without its signed thinking block
    (the double checks it): it goes back in the next round and after an approval."""
    tools = [calc(), {"type": "mcp", "server_label": "gated"}]
    body = {"model": "claude", "tools": tools, "reasoning": {"effort": "low"}}
    with ScriptedAnthropic(ANTHROPIC_KEY) as claude:
        raw = raw_config(anthropic_base=claude.base_url)
        raw["mcp"] = {"servers": {"calc": {"url": world.url, "require_approval": "never"}}}
        raw["mcp"]["servers"]["gated"] = {"url": world.url}
        async with serve_proxy(make_config(raw)) as client:
            SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
            ran = final(await create(client, stream, **body))
            SCRIPT.calls = [("gated__add", {"a": 2, "b": 3})]
            asked = final(await create(client, stream, **body))
            approve = [approval_response(asked["output"][-1]["id"])]
            approved = final(
                await create(
                    client, stream, **body, input=approve, previous_response_id=asked["id"]
                )
            )
    lists = ["mcp_list_tools", "mcp_list_tools"]
    assert kinds(ran) == [*lists, "reasoning", "mcp_call", "reasoning", "message"]
    assert kinds(asked) == [*lists, "reasoning", "mcp_approval_request"]
    assert kinds(approved)[0] == "mcp_call"
    assert approved["output"][0]["output"] == "5"
    assert len(claude.exchanges) == 4


def approval_response(request_id: str) -> dict[str, Any]:
    return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": True}


async def test_tool_choice_required_is_forced_in_the_first_round_only(world: Servers) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    async with proxy(world) as client:
        response = final(await create(client, True, tool_choice="required"))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    first, second = world.bodies()
    assert first["tool_choice"] == "required"
    assert second.get("tool_choice") in (None, "auto")
    assert response["tool_choice"] == "required"


@STREAMS
async def test_a_priced_response_costs_its_rounds_and_its_mcp_calls(
    world: Servers, stream: bool
) -> None:
    """Two rounds of 10 prompt and 5 completion tokens at $1 / $2 per million, and one call
    to a server at $0.01 a call: 2 x (10 x 1e-6 + 5 x 2e-6) + 0.01."""
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    raw = raw_config(openai_base=f"{world.upstream.base_url}/v1")
    raw["models"][0]["price"] = {"input": 1.0, "output": 2.0}
    raw["mcp"] = {
        "servers": {"calc": {"url": world.url, "require_approval": "never", "cost_per_call": 0.01}}
    }
    expected = 2 * (10 * 1e-6 + 5 * 2e-6) + 0.01
    async with serve_proxy(make_config(raw)) as client:
        answer = await create(client, stream)
        response = final(answer)
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    assert response["usage"]["cost"] == pytest.approx(expected, rel=1e-9)
    if not stream:
        assert float(answer.headers["x-toolrelay-cost"]) == pytest.approx(expected, rel=1e-9)


async def test_an_unpriced_response_shows_no_cost_though_its_calls_have_one(
    world: Servers,
) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    async with proxy(world) as client:
        answer = await create(client, False)
    response = final(answer)
    assert "cost" not in response["usage"]
    assert "x-toolrelay-cost" not in answer.headers


@STREAMS
async def test_a_budget_holds_each_round_to_what_it_cost(world: Servers, stream: bool) -> None:
    """Each round's worst case is ~$0.1 (100k output tokens at $1 per million) and the key's
    budget $0.15: every round is settled at what it cost (15 tokens) before the next reserves,
    so the second round fits; held at its worst case, the first would refuse the second."""
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    raw = raw_config(openai_base=f"{world.upstream.base_url}/v1")
    raw["server"] = {
        "keys": [{"name": "payer", "key": CLIENT_KEY, "budget": {"usd": 0.15, "period": "day"}}]
    }
    raw["models"][0]["price"] = {"input": 1.0, "output": 1.0}
    raw["mcp"] = {"servers": {"calc": {"url": world.url, "require_approval": "never"}}}
    async with serve_proxy(make_config(raw)) as client:
        response = final(await create(client, stream, max_output_tokens=100_000))
        spend = (await client.get("/v1/spend")).json()
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    (budget,) = spend["budgets"]
    assert budget["spent_usd"] == pytest.approx(2 * 15e-6)
    assert budget["reserved_usd"] == 0
