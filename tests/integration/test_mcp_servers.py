"""McpServers against real MCP servers built with the SDK's own server: stateless Streamable
HTTP, a legacy-handshake (stateful) one, and a stdio process."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from app.mcp import McpFailure, McpServers, ServerRef
from app.mcp.settings import McpConfig
from tests.helpers.mcp_servers import Rejecting, free_port, http_app, serve, stdio_command

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-header-value"


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with (
        serve(http_app("stateless")) as stateless,
        serve(http_app("legacy")) as legacy,
        serve(Rejecting(401)) as rejecting,
    ):
        yield {"stateless": stateless, "legacy": legacy, "rejecting": rejecting}


def _servers(servers: dict[str, Any], timeout: float = 10) -> McpServers:
    return McpServers(McpConfig.model_validate({"servers": servers}), timeout=timeout)


def _transports(urls: dict[str, str]) -> dict[str, Any]:
    return {
        "stateless": {"url": urls["stateless"], "headers": {"X-Token": SECRET}},
        "legacy": {"url": urls["legacy"]},
        "stdio": {"command": stdio_command()},
    }


@pytest.mark.parametrize("label", ["stateless", "legacy", "stdio"])
async def test_list_and_call_on_each_transport(urls: dict[str, str], label: str) -> None:
    servers = _servers(_transports(urls))
    try:
        tools = {tool.name: tool for tool in await servers.list_tools(ServerRef(label))}
        assert {"add", "echo", "fail", "slow"} <= set(tools)
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["add"].output_schema is not None
        added = await servers.call_tool(ServerRef(label), "add", {"a": 2, "b": 3})
        assert added.content == [{"type": "text", "text": "5"}]
        assert added.structured == {"result": 5}
        assert not added.is_error
        failed = await servers.call_tool(ServerRef(label), "fail", {})
        assert failed.is_error
        assert failed.content[0]["type"] == "text"
    finally:
        await servers.aclose()


async def test_configured_headers_reach_the_server_and_are_not_replaced(
    urls: dict[str, str],
) -> None:
    servers = _servers(_transports(urls))
    try:
        ref = ServerRef("stateless", headers={"X-Token": "client", "X-Extra": "added"})
        token = await servers.call_tool(ref, "header", {"name": "x-token"})
        extra = await servers.call_tool(ref, "header", {"name": "x-extra"})
        assert token.structured == {"result": SECRET}
        assert extra.structured == {"result": "added"}
    finally:
        await servers.aclose()


async def test_a_client_given_url_gets_no_configured_header(urls: dict[str, str]) -> None:
    servers = _servers(_transports(urls))
    try:
        ref = ServerRef("stateless", url=urls["stateless"])
        token = await servers.call_tool(ref, "header", {"name": "x-token"})
        assert token.structured == {"result": ""}
    finally:
        await servers.aclose()


async def test_allowed_tools_filter_the_list_and_refuse_other_calls(urls: dict[str, str]) -> None:
    servers = _servers({"s": {"url": urls["stateless"], "allowed_tools": ["add", "echo"]}})
    try:
        assert [tool.name for tool in await servers.list_tools(ServerRef("s"))] == ["add", "echo"]
        with pytest.raises(McpFailure) as raised:
            await servers.call_tool(ServerRef("s"), "fail", {})
        assert raised.value.kind == "protocol"
        assert "'s'" in raised.value.message
    finally:
        await servers.aclose()


async def test_a_dead_url_is_an_http_failure_naming_the_server() -> None:
    servers = _servers({"gone": {"url": f"http://127.0.0.1:{free_port()}/mcp"}})
    try:
        with pytest.raises(McpFailure) as raised:
            await servers.list_tools(ServerRef("gone"))
        assert (raised.value.kind, raised.value.code) == ("http", None)
        assert "MCP server 'gone'" in raised.value.message
    finally:
        await servers.aclose()


async def test_an_http_error_status_is_kept_and_no_secret_shown(urls: dict[str, str]) -> None:
    servers = _servers({"auth": {"url": urls["rejecting"], "headers": {"Authorization": SECRET}}})
    try:
        with pytest.raises(McpFailure) as raised:
            await servers.call_tool(ServerRef("auth"), "add", {"a": 1, "b": 2})
        assert (raised.value.kind, raised.value.code) == ("http", 401)
        assert SECRET not in str(raised.value)
    finally:
        await servers.aclose()


async def test_a_hung_call_times_out(urls: dict[str, str]) -> None:
    servers = _servers({"s": {"url": urls["stateless"]}}, timeout=0.5)
    try:
        with pytest.raises(McpFailure, match=r"no answer within 0\.5 s"):
            await servers.call_tool(ServerRef("s"), "slow", {"seconds": 3})
    finally:
        await servers.aclose()


async def test_a_killed_stdio_server_is_restarted_on_next_use() -> None:
    servers = _servers({"io": {"command": stdio_command()}})
    try:
        first = await servers.call_tool(ServerRef("io"), "pid", {})
        pid = first.structured["result"] if first.structured else None
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGKILL)
        process = servers.process("io")
        assert process is not None
        for _ in range(200):
            if not process.alive:
                break
            await asyncio.sleep(0.025)
        second = await servers.call_tool(ServerRef("io"), "pid", {})
        assert second.structured is not None
        assert second.structured["result"] not in (pid, None)
    finally:
        await servers.aclose()


async def test_concurrent_first_uses_start_one_stdio_process() -> None:
    servers = _servers({"io": {"command": stdio_command()}})
    try:
        results = await asyncio.gather(
            *(servers.call_tool(ServerRef("io"), "pid", {}) for _ in range(5))
        )
        assert len({str(result.structured) for result in results}) == 1
    finally:
        await servers.aclose()
    process = servers.process("io")
    assert process is not None
    assert not process.alive


async def test_configured_defaults_are_read_back() -> None:
    servers = McpServers(
        McpConfig.model_validate(
            {
                "servers": {
                    "a": {"url": "http://127.0.0.1:1/mcp", "require_approval": "never"},
                    "b": {
                        "url": "http://127.0.0.1:1/mcp",
                        "require_approval": {"always": {"tool_names": ["x"]}},
                    },
                    "c": {"url": "http://127.0.0.1:1/mcp"},
                },
                "remote_urls": ["https://mcp.example.com/*"],
            }
        )
    )
    assert servers.configured("a")
    assert not servers.configured("z")
    assert servers.require_approval("a") == "never"
    assert servers.require_approval("b") == {"always": {"tool_names": ["x"]}}
    assert servers.require_approval("c") is None
    assert servers.allowed_tools("c") is None
    assert servers.max_rounds == 16
    assert servers.remote_url_allowed("https://mcp.example.com/sse")
    assert not servers.remote_url_allowed("http://169.254.169.254/latest")
