"""/mcp on a proxy without MCP servers (issue 40): the SDK's server is started on the first
request instead of with the app, and still answers as before: an MCP server with no tools,
for as many clients as come, and an unknown tool is a JSON-RPC error."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import RunningProxy, run_proxy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    config = (
        "providers:\n  demo: {kind: demo}\nmodels:\n  - {name: demo, provider: demo, model: demo}\n"
    )
    with run_proxy(config, tmp_path_factory.mktemp("no-mcp")) as running:
        yield running


def _client(proxy: RunningProxy) -> Client:
    url = f"http://127.0.0.1:{proxy.port}/mcp"
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient()), mode="auto")


async def test_lists_no_tools_to_every_client(proxy: RunningProxy) -> None:
    for _ in range(2):
        async with _client(proxy) as client:
            assert (await client.list_tools()).tools == []


async def test_a_call_is_an_unknown_tool(proxy: RunningProxy) -> None:
    async with _client(proxy) as client:
        with pytest.raises(MCPError, match="Unknown tool: any__tool"):
            await client.call_tool("any__tool", {})
