"""/mcp through a real proxy process, with the mcp SDK's own client: the tools of every server
a key may use as LABEL__TOOL, calls answered as the server gave them, a server that is down
left out, 401 without a key, a key's allow-list, the log lines and the metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, free_port, run_proxy
from tests.helpers.mcp_servers import http_app, serve

pytestmark = pytest.mark.anyio

LIMITED_KEY = "limited-key-SECRET-789"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    with serve(http_app("stateless")) as up_url:
        config = f"""
server:
  log: {{format: json}}
  keys:
    - {{name: team, key: "{CLIENT_KEY}"}}
    - {{name: limited, key: "{LIMITED_KEY}", mcp: [down]}}
mcp:
  servers:
    up: {{url: "{up_url}", allowed_tools: [add, echo, fail]}}
    down: {{url: "http://127.0.0.1:{free_port()}/mcp"}}
"""
        with run_proxy(config, tmp_path_factory.mktemp("mcp")) as running:
            yield running


def _client(proxy: RunningProxy, key: str = CLIENT_KEY) -> Client:
    http_client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    url = f"http://127.0.0.1:{proxy.port}/mcp"
    return Client(streamable_http_client(url, http_client=http_client), mode="auto")


def _log_lines(log: Path, event: str) -> list[dict[str, object]]:
    lines = []
    for text in log.read_text().splitlines():
        if text.startswith("{") and f'"event":"{event}"' in text:
            lines.append(json.loads(text))
    return lines


async def test_lists_the_up_servers_tools_and_leaves_the_down_one_out(proxy: RunningProxy) -> None:
    async with _client(proxy) as client:
        listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["up__add", "up__echo", "up__fail"]
    assert tools["up__add"].description == "Add two integers."
    assert tools["up__add"].input_schema["required"] == ["a", "b"]
    assert tools["up__add"].output_schema is not None
    errors = _log_lines(proxy.log, "mcp_error")
    assert any(line["server"] == "down" and line["operation"] == "tools/list" for line in errors)
    assert all(line["level"] == "warning" for line in errors)  # a server down needs a look


@pytest.mark.parametrize("name", ["nobody__add", "up__slow", "upadd"])
async def test_an_unknown_tool_is_a_jsonrpc_error_whichever_part_is_unknown(
    proxy: RunningProxy, name: str
) -> None:
    """An unknown label, or a tool its server has that `allowed_tools` leaves out: the same
    JSON-RPC error -32602 (the MCP spec's answer to an unknown tool)."""
    async with _client(proxy) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(name, {})
    assert raised.value.code == -32602
    assert f"Unknown tool: {name}" in str(raised.value)


async def test_calls_answer_the_servers_result_as_it_came(proxy: RunningProxy) -> None:
    async with _client(proxy) as client:
        added = await client.call_tool("up__add", {"a": 2, "b": 3})
        failed = await client.call_tool("up__fail", {})
        down = await client.call_tool("down__anything", {})
    assert [block.model_dump(exclude_none=True) for block in added.content] == [
        {"type": "text", "text": "5"}
    ]
    assert added.structured_content == {"result": 5}
    assert not added.is_error
    assert failed.is_error
    assert down.is_error
    assert "MCP server 'down'" in down.content[0].text  # type: ignore[union-attr]
    calls = _log_lines(proxy.log, "mcp_call")
    assert {(line["server"], line["tool"], line["outcome"]) for line in calls} >= {
        ("up", "add", "ok"),
        ("up", "fail", "error"),
        ("down", "anything", "error"),
    }
    assert all(line["key"] == "team" and "duration_ms" in line for line in calls)
    assert all("arguments" not in line and "result" not in line for line in calls)
    metrics = httpx.get(f"http://127.0.0.1:{proxy.port}/metrics").text
    assert (
        'toolrelay_mcp_calls_total{key="team",outcome="ok",server="up",tool="add"} 1.0' in metrics
    )
    assert 'toolrelay_mcp_call_duration_seconds_count{server="up"}' in metrics
    assert 'toolrelay_mcp_call_duration_seconds_count{server="down"}' in metrics


async def test_without_a_key_is_401(proxy: RunningProxy) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = httpx.post(
        f"http://127.0.0.1:{proxy.port}/mcp",
        json=body,
        headers={"accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    wrong = httpx.post(
        f"http://127.0.0.1:{proxy.port}/mcp",
        json=body,
        headers={"authorization": "Bearer nope", "accept": "application/json"},
    )
    assert wrong.status_code == 401


async def test_a_keys_allow_list_hides_the_other_server(proxy: RunningProxy) -> None:
    async with _client(proxy, LIMITED_KEY) as client:
        listed = await client.list_tools()
        with pytest.raises(MCPError, match="Unknown tool: up__add"):
            await client.call_tool("up__add", {"a": 1, "b": 1})
    assert listed.tools == []


BUDGETED_KEY = "budgeted-key-SECRET-321"


class ToolCalls:
    """An MCP server app that counts the `tools/call` requests it is sent."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        messages = [await receive()]
        while messages[-1].get("more_body", False):
            messages.append(await receive())
        body = b"".join(message.get("body", b"") for message in messages)
        if body and json.loads(body).get("method") == "tools/call":
            self.calls += 1

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def settled_spend(proxy: RunningProxy, key: str) -> dict[str, Any]:
    """/v1/spend once nothing is reserved: a request is settled just after its answer went
    out, so the next request may come first."""
    for _ in range(100):
        spend: dict[str, Any] = httpx.get(
            f"{proxy.base_url}/spend", headers={"authorization": f"Bearer {key}"}
        ).json()
        if all(budget["reserved_usd"] == 0 for budget in spend["budgets"]):
            return spend
        time.sleep(0.02)
    raise AssertionError(f"still reserved: {spend}")


async def test_a_priced_servers_calls_count_against_the_keys_budget(
    tmp_path: Path,
) -> None:
    """`cost_per_call` $0.01 under a key budget of $0.025 a day: two calls are made and
    counted, the third is refused before it reaches the server (isError naming the budget;
    the server saw two tools/call requests, none for it)."""
    server = ToolCalls(http_app("stateless"))
    with serve(server) as url:
        config = f"""
server:
  keys:
    - {{name: payer, key: "{BUDGETED_KEY}", budget: {{usd: 0.025, period: day}}}}
mcp:
  servers:
    paid: {{url: "{url}", cost_per_call: 0.01}}
"""
        with run_proxy(config, tmp_path) as running:
            async with _client(running, BUDGETED_KEY) as client:
                results = [await client.call_tool("paid__add", {"a": 1, "b": i}) for i in range(3)]
                made = server.calls
            spend = settled_spend(running, BUDGETED_KEY)
    assert [result.is_error for result in results] == [False, False, True]
    assert made == 2  # the refused call: 0 at the server
    assert "Budget exceeded" in results[2].content[0].text  # type: ignore[union-attr]
    assert spend["spent_usd"] == pytest.approx(0.02)
    (budget,) = spend["budgets"]
    assert (budget["scope"], budget["spent_usd"], budget["reserved_usd"]) == ("key", 0.02, 0)
