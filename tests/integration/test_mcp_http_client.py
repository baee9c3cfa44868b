"""app/mcp/http.py's held clients and per-URL memory against real SDK servers: each operation
keeps its own HTTP status, no cookie crosses operations, a failure forgets what was negotiated
(and a server replaced at the same URL is negotiated afresh), concurrent operations on one
held client each get their own answer, one ServerRef's headers never reach another's calls,
and aclose stops every held client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from app.mcp import McpFailure, McpServers, ServerRef
from app.mcp.settings import McpConfig
from tests.helpers.mcp_servers import Gate, free_port, http_app, mismatched_app, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
def gate() -> Iterator[tuple[Gate, str]]:
    """A stateless (2026-07-28) server behind a Gate, fresh per test."""
    app = Gate(http_app("stateless"))
    with serve(app) as url:
        yield app, url


def _servers(url: str, timeout: float = 10) -> McpServers:
    config = McpConfig.model_validate(
        {"servers": {"gated": {"url": url}}, "remote_urls": ["http://127.0.0.1:*"]}
    )
    return McpServers(config, timeout=timeout)


def _held(servers: McpServers) -> dict[Any, Any]:
    """The connector's held clients (private state: what the tests are about)."""
    return dict(servers._http._held)


async def _echo(servers: McpServers, text: str, ref: ServerRef | None = None) -> Any:
    result = await servers.call_tool(ref or ServerRef("gated"), "echo", {"text": text})
    return result.structured


async def test_a_held_client_reports_a_server_turning_to_401(gate: tuple[Gate, str]) -> None:
    app, url = gate
    servers = _servers(url)
    try:
        assert await _echo(servers, "one") == {"result": "one"}
        assert await _echo(servers, "two") == {"result": "two"}
        assert len(_held(servers)) == 1  # the second call ran on the held client
        app.status = 401
        with pytest.raises(McpFailure) as failed:
            await _echo(servers, "three")
        assert (failed.value.kind, failed.value.code) == ("http", 401)
        assert "401" in failed.value.message
        assert servers._http._known == {}  # the failure forgot what was negotiated
        app.status = None
        assert await _echo(servers, "four") == {"result": "four"}
        assert await _echo(servers, "five") == {"result": "five"}
    finally:
        await servers.aclose()


async def test_no_cookie_from_one_operation_is_sent_on_another(gate: tuple[Gate, str]) -> None:
    _app, url = gate
    servers = _servers(url)
    try:
        for _ in range(3):  # the first on a fresh client, the rest on the held one
            cookie = await servers.call_tool(ServerRef("gated"), "header", {"name": "cookie"})
            assert cookie.structured == {"result": ""}
        assert len(_held(servers)) == 1
    finally:
        await servers.aclose()


async def test_a_server_replaced_by_a_legacy_one_is_negotiated_again() -> None:
    port = free_port()
    with serve(http_app("stateless"), port=port) as url:
        servers = _servers(url)
        assert await _echo(servers, "new") == {"result": "new"}
        assert await _echo(servers, "held") == {"result": "held"}
        assert servers._http._known[url].mode != "legacy"
    try:
        with serve(http_app("legacy"), port=port):
            # The documented cost: the remembered revision fails one operation at most.
            try:
                first = await _echo(servers, "first")
            except McpFailure:
                first = None
            assert first in (None, {"result": "first"})
            assert await _echo(servers, "again") == {"result": "again"}
            assert servers._http._known[url].mode == "legacy"
            assert _held(servers) == {}
            tools = await servers.list_tools(ServerRef("gated"))
            assert "echo" in {tool.name for tool in tools}
    finally:
        await servers.aclose()


async def test_concurrent_calls_on_one_held_client_get_their_own_results(
    gate: tuple[Gate, str],
) -> None:
    _app, url = gate
    servers = _servers(url)
    try:
        await _echo(servers, "warm")
        results = await asyncio.gather(
            *(servers.call_tool(ServerRef("gated"), "add", {"a": i, "b": 1000}) for i in range(40))
        )
        assert [result.structured for result in results] == [
            {"result": i + 1000} for i in range(40)
        ]
        assert len(_held(servers)) == 1
    finally:
        await servers.aclose()


async def test_a_refused_operation_does_not_fail_the_others_on_its_client(
    gate: tuple[Gate, str],
) -> None:
    """One operation's 401 is its own: concurrent ones on the same held client (a slow call
    in flight, quick ones alongside) still get their answers."""
    app, url = gate
    servers = _servers(url)
    try:
        await _echo(servers, "warm")
        slow = asyncio.ensure_future(
            servers.call_tool(ServerRef("gated"), "slow", {"seconds": 0.5})
        )
        while app.inflight == 0:
            await asyncio.sleep(0.01)
        outcomes = await asyncio.gather(
            *(_echo(servers, f"ok-{i}") for i in range(5)),
            _echo(servers, "deny-me"),
            *(_echo(servers, f"ok-{i}") for i in range(5, 10)),
            return_exceptions=True,
        )
        refused = outcomes.pop(5)
        assert isinstance(refused, McpFailure)
        assert refused.code == 401
        assert outcomes == [{"result": f"ok-{i}"} for i in range(10)]
        assert (await slow).content == [{"type": "text", "text": "done"}]
    finally:
        await servers.aclose()


async def test_one_refs_headers_never_reach_anothers_calls(gate: tuple[Gate, str]) -> None:
    _app, url = gate
    servers = _servers(url)
    refs = [
        ServerRef("remote", url=url, headers={"X-Token": "alpha"}),
        ServerRef("remote", url=url, headers={"X-Token": "beta"}),
        ServerRef("remote", url=url),
        ServerRef("gated", headers={"X-Token": "gamma"}),
        ServerRef("gated"),
    ]
    expected = ["alpha", "beta", "", "gamma", ""]

    async def token(ref: ServerRef) -> str:
        result = await servers.call_tool(ref, "header", {"name": "x-token"})
        assert result.structured is not None
        return str(result.structured["result"])

    try:
        for _ in range(2):  # the first round teaches the URL; the second runs on held clients
            assert [await token(ref) for ref in refs] == expected
        mixed = await asyncio.gather(*(token(ref) for _ in range(6) for ref in refs))
        assert mixed == expected * 6
        # One held client per header set: the configured server without headers and the
        # client-given URL without headers are the same URL and headers, so share one.
        assert len(_held(servers)) == 4
    finally:
        await servers.aclose()


async def test_aclose_stops_every_held_client(gate: tuple[Gate, str]) -> None:
    _app, url = gate
    servers = _servers(url)
    for name in ("a", "b"):
        ref = ServerRef("gated", headers={"X-Who": name})
        await _echo(servers, "learn", ref)
        await _echo(servers, "hold", ref)
    held = list(_held(servers).values())
    assert len(held) == 2
    await servers.aclose()
    assert all(entry.task is not None and entry.task.done() for entry in held)
    assert _held(servers) == {}


async def test_a_result_breaking_its_output_schema_is_relayed_as_the_server_gave_it() -> None:
    """CONTRACT.md: a call answers the server's result as it came (the end client judges it);
    the SDK's own check made this a 'connection failed (RuntimeError)' failure."""
    with serve(mismatched_app()) as url:
        servers = _servers(url)
        try:
            result = await servers.call_tool(ServerRef("gated"), "add", {})
        finally:
            await servers.aclose()
    assert (result.structured, result.is_error) == ({"result": 5}, False)
    assert result.content == [{"type": "text", "text": "5"}]
