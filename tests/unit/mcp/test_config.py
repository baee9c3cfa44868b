"""config.yaml's `mcp` section and keys' `mcp` allow-lists: what loads, and the one line a
bad value stops start-up with."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import ConfigError, parse_config
from app.mcp.settings import ApprovalFilter
from app.ops.keys import KeyRing


def _config(mcp: Any, keys: Any = None) -> Any:
    raw: dict[str, Any] = {"mcp": mcp}
    if keys is not None:
        raw["server"] = {"keys": keys}
    return parse_config(raw, "config.yaml", environ={"TOKEN": "t0k3n", "TZ_NAME": "UTC"})


def test_servers_of_both_transports_load_with_variables_substituted() -> None:
    config = _config(
        {
            "servers": {
                "github": {
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                    "allowed_tools": ["search"],
                    "require_approval": "never",
                },
                "clock": {"command": ["uvx", "mcp-server-time"], "env": {"TZ": "${TZ_NAME}"}},
            },
            "remote_urls": ["https://mcp.example.com/*"],
            "max_rounds": 4,
        }
    )
    github, clock = config.mcp.servers["github"], config.mcp.servers["clock"]
    assert github.headers == {"Authorization": "Bearer t0k3n"}
    assert github.require_approval == "never"
    assert clock.env == {"TZ": "UTC"}
    assert clock.require_approval is None
    assert config.mcp.max_rounds == 4
    assert "Bearer t0k3n" in config.secrets()


def test_defaults_without_an_mcp_section() -> None:
    config = parse_config({}, "config.yaml")
    assert config.mcp.servers == {}
    assert config.mcp.remote_urls == []
    assert config.mcp.max_rounds == 16


def test_approval_filter() -> None:
    config = _config(
        {
            "servers": {
                "s": {
                    "url": "http://127.0.0.1:1/mcp",
                    "require_approval": {"never": {"tool_names": ["read"]}},
                }
            }
        }
    )
    approval = config.mcp.servers["s"].require_approval
    assert isinstance(approval, ApprovalFilter)
    assert approval.never is not None
    assert approval.never.tool_names == ["read"]


@pytest.mark.parametrize(
    ("mcp", "message"),
    [
        ({"servers": {"s": {}}}, "mcp.servers.s: give `url` (Streamable HTTP) or `command`"),
        (
            {"servers": {"s": {"url": "http://h/mcp", "command": ["x"]}}},
            "mcp.servers.s: give `url`",
        ),
        ({"servers": {"s": {"url": "ftp://h/mcp"}}}, "url: an http:// or https:// URL"),
        ({"servers": {"s": {"command": ["x"], "headers": {"A": "b"}}}}, "headers: only an HTTP"),
        ({"servers": {"s": {"url": "http://h/mcp", "env": {"A": "b"}}}}, "env: only a stdio"),
        ({"servers": {"s": {"command": []}}}, "mcp.servers.s.command"),
        ({"servers": {"a b": {"url": "http://h/mcp"}}}, "'a b': a label is letters"),
        ({"servers": {"a__b": {"url": "http://h/mcp"}}}, "may not contain '__'"),
        ({"servers": {"s": {"url": "http://h/mcp", "require_approval": "sometimes"}}}, "s"),
        ({"max_rounds": 0}, "mcp.max_rounds"),
        ({"serverz": {}}, "mcp.serverz: unknown key"),
    ],
)
def test_bad_values_stop_start_up_with_one_line(mcp: Any, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(mcp)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_keys_mcp_list_names_configured_servers() -> None:
    keys = [{"name": "alice", "key": "k-alice", "mcp": ["nope"]}]
    with pytest.raises(ConfigError, match=r"server.keys\[0\].mcp: unknown MCP server 'nope'"):
        _config({"servers": {"s": {"url": "http://h/mcp"}}}, keys)


def test_a_keys_mcp_list_reaches_its_client_key() -> None:
    keys = [
        {"name": "alice", "key": "k-alice", "mcp": ["a"]},
        {"name": "bob", "key": "k-bob"},
    ]
    config = _config({"servers": {"a": {"url": "http://h/a"}, "b": {"url": "http://h/b"}}}, keys)
    ring = KeyRing(config.server)
    alice, bob = ring.identify(b"k-alice"), ring.identify(b"k-bob")
    assert alice.may_use_server("a")
    assert not alice.may_use_server("b")
    assert bob.may_use_server("b")
