"""app/tool_loop/hosted.py: a request's `mcp` tools checked and resolved to servers before any
MCP or model call (CONTRACT.md, "MCP"), against a real McpServers over a parsed config: a
configured label, a client `server_url` only where `mcp.remote_urls` allows it, the key's
allow-list, every malformed field a 400 naming it, and the approval policy per tool."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidRequest
from app.mcp.registry import McpServers
from app.mcp.settings import McpConfig
from app.mcp.types import ServerRef
from app.ops.keys import ClientKey
from app.tool_loop.hosted import (
    HostedServer,
    McpServerNotAllowed,
    ToolFilter,
    has_mcp_tools,
    hosted_servers,
)

CONFIG = McpConfig.model_validate(
    {
        "servers": {
            "calc": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Conf": "c"}},
            "ask": {"url": "http://127.0.0.1:9/mcp", "require_approval": "never"},
            "some": {
                "url": "http://127.0.0.1:9/mcp",
                "require_approval": {"never": {"tool_names": ["add"]}},
            },
        },
        "remote_urls": ["https://mcp.example.com/*"],
    }
)
MCP = McpServers(CONFIG)
EVERY = ClientKey("every")
ONLY_ASK = ClientKey("only-ask", mcp=frozenset({"ask"}))


def resolve(*tools: Any, key: ClientKey = EVERY) -> list[HostedServer]:
    return hosted_servers({"tools": list(tools)}, MCP, key)


def refused(tool: Any, param: str) -> str:
    with pytest.raises(InvalidRequest) as caught:
        resolve({"type": "function", "name": "f"}, tool)
    assert caught.value.param == param, caught.value.message
    return caught.value.message


def test_a_configured_label_keeps_its_position_and_the_requests_headers() -> None:
    tool = {"type": "mcp", "server_label": "calc", "headers": {"X-A": "1"}, "authorization": "t"}
    [server] = resolve({"type": "function", "name": "f"}, tool)
    assert server.position == 1
    assert server.label == "calc"
    assert server.server == ServerRef("calc", None, {"X-A": "1", "Authorization": "Bearer t"})
    assert server.tools == ToolFilter()
    assert server.approval == "always"  # the configured server says nothing: OpenAI's default


def test_the_configured_approval_is_the_default_and_the_requests_wins() -> None:
    assert resolve({"type": "mcp", "server_label": "ask"})[0].approval == "never"
    assert resolve({"type": "mcp", "server_label": "some"})[0].approval == {
        "never": {"tool_names": ["add"]}
    }
    tool = {"type": "mcp", "server_label": "ask", "require_approval": "always"}
    assert resolve(tool)[0].approval == "always"


def test_a_remote_url_is_taken_only_where_remote_urls_allows_it() -> None:
    tool = {"type": "mcp", "server_label": "any", "server_url": "https://mcp.example.com/x"}
    [server] = resolve(tool)
    assert server.server.url == "https://mcp.example.com/x"
    assert server.approval == "always"  # never a configured server's default for a URL
    for url in ("https://evil.example.com/", "http://127.0.0.1:9/mcp", "https://mcp.example.com"):
        message = refused({**tool, "server_url": url}, "tools[1].server_url")
        assert "remote_urls" in message
    for wrong in ("", 5, ["https://mcp.example.com/x"]):
        refused({**tool, "server_url": wrong}, "tools[1].server_url")


def test_a_remote_url_named_like_a_configured_server_does_not_get_its_headers() -> None:
    tool = {"type": "mcp", "server_label": "calc", "server_url": "https://mcp.example.com/x"}
    [server] = resolve(tool)
    assert server.server == ServerRef("calc", "https://mcp.example.com/x", {})


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "mcp"}, "tools[1].server_label"),
        ({"type": "mcp", "server_label": ""}, "tools[1].server_label"),
        ({"type": "mcp", "server_label": 3}, "tools[1].server_label"),
        ({"type": "mcp", "server_label": "nope"}, "tools[1].server_label"),
        ({"type": "mcp", "server_label": "calc", "connector_id": "x"}, "tools[1].connector_id"),
        ({"type": "mcp", "server_label": "calc", "headers": {"a": 1}}, "tools[1].headers"),
        ({"type": "mcp", "server_label": "calc", "headers": ["a"]}, "tools[1].headers"),
        ({"type": "mcp", "server_label": "calc", "authorization": ""}, "tools[1].authorization"),
        ({"type": "mcp", "server_label": "calc", "authorization": 5}, "tools[1].authorization"),
        ({"type": "mcp", "server_label": "calc", "allowed_tools": "add"}, "tools[1].allowed_tools"),
        ({"type": "mcp", "server_label": "calc", "allowed_tools": [1]}, "tools[1].allowed_tools"),
        (
            {"type": "mcp", "server_label": "calc", "allowed_tools": {"names": ["add"]}},
            "tools[1].allowed_tools",
        ),
        (
            {"type": "mcp", "server_label": "calc", "allowed_tools": {"read_only": "yes"}},
            "tools[1].allowed_tools",
        ),
        (
            {"type": "mcp", "server_label": "calc", "require_approval": "sometimes"},
            "tools[1].require_approval",
        ),
        (
            {"type": "mcp", "server_label": "calc", "require_approval": {}},
            "tools[1].require_approval",
        ),
        (
            {"type": "mcp", "server_label": "calc", "require_approval": {"never": ["add"]}},
            "tools[1].require_approval",
        ),
        (
            {"type": "mcp", "server_label": "calc", "require_approval": {"maybe": {}}},
            "tools[1].require_approval",
        ),
        (
            {
                "type": "mcp",
                "server_label": "calc",
                "require_approval": {"always": {"tool_names": None}},
            },
            "tools[1].require_approval",
        ),
        (
            {
                "type": "mcp",
                "server_label": "calc",
                "require_approval": {"never": {"tool_names": [1]}},
            },
            "tools[1].require_approval",
        ),
        (
            {
                "type": "mcp",
                "server_label": "calc",
                "require_approval": {"never": {"read_only": 1}},
            },
            "tools[1].require_approval",
        ),
    ],
)
def test_every_malformed_field_is_a_400_naming_it(tool: dict[str, Any], param: str) -> None:
    refused(tool, param)


def test_a_label_named_twice_is_refused() -> None:
    with pytest.raises(InvalidRequest) as caught:
        resolve({"type": "mcp", "server_label": "calc"}, {"type": "mcp", "server_label": "calc"})
    assert caught.value.param == "tools[1].server_label"


def test_a_server_outside_the_keys_list_is_a_403_but_a_remote_url_is_not_the_keys() -> None:
    with pytest.raises(McpServerNotAllowed) as caught:
        resolve({"type": "mcp", "server_label": "calc"}, key=ONLY_ASK)
    assert caught.value.status == 403
    assert resolve({"type": "mcp", "server_label": "ask"}, key=ONLY_ASK)[0].label == "ask"
    tool = {"type": "mcp", "server_label": "r", "server_url": "https://mcp.example.com/r"}
    assert resolve(tool, key=ONLY_ASK)[0].label == "r"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, ToolFilter()),
        ([], ToolFilter(frozenset())),
        (["add", "echo"], ToolFilter(frozenset({"add", "echo"}))),
        ({"tool_names": ["add"]}, ToolFilter(frozenset({"add"}))),
        ({"read_only": True}, ToolFilter(None, read_only=True)),
        ({"tool_names": None, "read_only": None}, ToolFilter()),
        ({}, ToolFilter()),
    ],
)
def test_allowed_tools_forms(given: Any, expected: ToolFilter) -> None:
    tool = {"type": "mcp", "server_label": "calc", "allowed_tools": given}
    assert resolve(tool)[0].tools == expected


def test_a_filter_admits_by_name_and_read_only_hint() -> None:
    assert ToolFilter().admits("add", None)
    assert not ToolFilter(frozenset({"echo"})).admits("add", None)
    read_only = ToolFilter(None, read_only=True)
    assert read_only.admits("add", {"readOnlyHint": True})
    assert not read_only.admits("add", {"readOnlyHint": False})
    assert not read_only.admits("add", None)


def server(approval: Any) -> HostedServer:
    return HostedServer(0, ServerRef("calc"), ToolFilter(), approval)


@pytest.mark.parametrize(
    ("approval", "name", "annotations", "asks"),
    [
        ("always", "add", None, True),
        ("never", "add", None, False),
        ({"never": {"tool_names": ["add"]}}, "add", None, False),
        ({"never": {"tool_names": ["add"]}}, "echo", None, True),
        ({"always": {"tool_names": ["add"]}}, "echo", None, True),  # unnamed: asks, as OpenAI
        ({"always": {"tool_names": ["add"]}, "never": {"tool_names": ["add"]}}, "add", None, False),
        ({"never": {"read_only": True}}, "add", {"readOnlyHint": True}, False),
        ({"never": {"read_only": True}}, "add", {"readOnlyHint": False}, True),
        ({"never": {"read_only": True}}, "add", None, True),
        ({"never": {"tool_names": "add"}}, "add", None, True),  # not a list: names nothing
        ({"never": {"tool_names": ["add", 3]}}, "add", None, False),
    ],
)
def test_needs_approval(approval: Any, name: str, annotations: Any, asks: bool) -> None:
    assert server(approval).needs_approval(name, annotations) is asks


@pytest.mark.parametrize(
    ("body", "has"),
    [
        ({}, False),
        ({"tools": None}, False),
        ({"tools": {"type": "mcp"}}, False),
        ({"tools": ["mcp", {"type": "function"}]}, False),
        ({"tools": [{"type": "function"}, {"type": "mcp"}]}, True),
    ],
)
def test_has_mcp_tools(body: dict[str, Any], has: bool) -> None:
    assert has_mcp_tools(body) is has
