"""What an operator needs to fix an MCP server's configuration (issue 36): a stdio command that
is not installed is named, at start-up (one warning line; the proxy still starts) and in the
failure of a call; a header left empty by its `${VAR}` is warned about at start-up, naming the
server and the header, never a value."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from app.mcp import McpFailure, McpServers, ServerRef
from app.mcp.settings import McpConfig

pytestmark = pytest.mark.anyio

MISSING = "toolrelay-no-such-mcp-server"


def _servers(servers: dict[str, Any]) -> McpServers:
    return McpServers(McpConfig.model_validate({"servers": servers}), timeout=10)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_a_command_not_on_path_is_warned_about_and_named_in_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = _servers({"clock": {"command": [MISSING, "--utc"]}})
    try:
        [warning] = [line for line in _warnings(caplog) if MISSING in line]
        assert "'clock'" in warning
        with pytest.raises(McpFailure) as raised:
            await servers.list_tools(ServerRef("clock"))
    finally:
        await servers.aclose()
    assert raised.value.message.count("clock") == 1
    assert f"'{MISSING}'" in raised.value.message
    assert "FileNotFoundError" not in raised.value.message


async def test_a_command_on_path_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    servers = _servers({"clock": {"command": ["python3", "-c", "pass"]}})
    await servers.aclose()
    assert _warnings(caplog) == []


@pytest.mark.parametrize("value", ["", "Bearer ", "   "])
async def test_an_empty_header_is_warned_about_without_its_value(
    caplog: pytest.LogCaptureFixture, value: str
) -> None:
    headers = {"Authorization": value, "X-Fine": "set-SECRET-value"}
    servers = _servers({"github": {"url": "http://127.0.0.1:9/mcp", "headers": headers}})
    await servers.aclose()
    [warning] = _warnings(caplog)
    assert "'github'" in warning
    assert "Authorization" in warning
    assert "X-Fine" not in warning
    assert "SECRET" not in warning


async def test_headers_all_set_are_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    servers = _servers({"github": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "Bearer x"}}})
    await servers.aclose()
    assert _warnings(caplog) == []
