"""A key made at run time holds like a config key everywhere a key counts: its budget (and its
team's) refuse with 429 budget_exceeded once spent, and /mcp takes it as /v1/ does."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.console.conftest import ADMIN, console_raw
from tests.integration.conftest import USER, assert_error, make_config, serve

pytestmark = pytest.mark.anyio

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def priced(url: str, **server: object) -> object:
    """The console's config with the demo model priced (1 USD a token each way) and no
    other budget anywhere, so only a created key's budget can refuse."""
    raw = console_raw(url, **server)
    for model in raw["models"]:
        if model["name"] == "demo":
            model["price"] = {"input": 1e6, "output": 1e6}
    return make_config(raw)


async def _spend_until_refused(proxy: object, headers: dict[str, str]) -> list[int]:
    statuses = []
    body = {"model": "demo", "messages": USER, "max_tokens": 5}
    for _ in range(40):
        answer = await proxy.post("/v1/chat/completions", json=body, headers=headers)  # type: ignore[attr-defined]
        statuses.append(answer.status_code)
        if answer.status_code != 200:
            error = assert_error(answer, 429)
            assert error["code"] == "budget_exceeded", error
            break
    return statuses


async def test_a_created_keys_budget_is_enforced(tmp_path: Path) -> None:
    async with serve(priced(f"sqlite:///{tmp_path}/b.db"), client_key=None) as proxy:
        made = await proxy.post(
            "/v1/keys",
            json={"name": "tiny", "budget": {"usd": 200, "period": "day"}},
            headers=ADMIN,
        )
        assert made.status_code == 201, made.text
        statuses = await _spend_until_refused(
            proxy, {"authorization": f"Bearer {made.json()['key']}"}
        )
        assert statuses[0] == 200
        assert statuses[-1] == 429


async def test_a_created_keys_team_budget_is_enforced(tmp_path: Path) -> None:
    teams = {"research": {"budget": {"usd": 200, "period": "day"}}}
    config = priced(f"sqlite:///{tmp_path}/t.db", teams=teams)
    async with serve(config, client_key=None) as proxy:
        made = await proxy.post(
            "/v1/keys", json={"name": "member", "team": "research"}, headers=ADMIN
        )
        assert made.status_code == 201, made.text
        statuses = await _spend_until_refused(
            proxy, {"authorization": f"Bearer {made.json()['key']}"}
        )
        assert statuses[0] == 200
        assert statuses[-1] == 429


async def test_mcp_takes_a_created_key(tmp_path: Path) -> None:
    async with serve(priced(f"sqlite:///{tmp_path}/m.db"), client_key=None) as proxy:
        made = (await proxy.post("/v1/keys", json={"name": "agent"}, headers=ADMIN)).json()
        own = {"authorization": f"Bearer {made['key']}", **MCP_HEADERS}
        answer = await proxy.post("/mcp", json=MCP_INIT, headers=own)
        assert answer.status_code == 200, answer.text
        wrong = {"authorization": "Bearer tr-wrong", **MCP_HEADERS}
        assert_error(await proxy.post("/mcp", json=MCP_INIT, headers=wrong), 401)


async def test_the_keys_page_creates_a_key_with_a_budget_that_spend_lists(tmp_path: Path) -> None:
    config = priced(f"sqlite:///{tmp_path}/u.db", admin_keys=[""])  # loopback: no sign-in
    down = httpx.MockTransport(lambda request: httpx.Response(500, json={"error": "down"}))
    async with serve(config, transport=down) as proxy:
        form = {"name": "capped", "budget_usd": "2.5", "period": "week"}
        page = await proxy.post("/ui/keys", data=form)
        assert page.status_code == 200, page.text
        assert "2.5 USD / week" in page.text
        listed = (await proxy.get("/v1/keys", headers=ADMIN)).json()["data"]
        assert [k["budget"] for k in listed if k["name"] == "capped"] == [
            {"usd": 2.5, "period": "week"}
        ]
        bad = await proxy.post("/ui/keys", data={"name": "x", "budget_usd": "lots"})
        assert bad.status_code == 200
        assert 'class="error"' in bad.text
        spend = await proxy.get("/ui/spend")
        assert "capped" in spend.text
        assert "unpriced" not in spend.text  # nothing logged yet
        await proxy.post("/v1/chat/completions", json={"model": "mini", "messages": USER})
        await proxy._transport.app.state.proxy.console.writer.flush()  # type: ignore[attr-defined]
        assert (await proxy.get("/v1/logs", headers=ADMIN)).json()["data"]
        assert "unpriced" in (await proxy.get("/ui/spend")).text
