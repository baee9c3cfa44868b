"""/v1/logs and /v1/logs/{id} on both databases: one row per request once its key is known,
its tool calls and verdicts, bodies as the client sent and received them (a stream's answer
assembled), never a key or signature."""

from __future__ import annotations

import httpx
import pytest

from tests.console.conftest import ADMIN, ADMIN_KEY, console_config, wait_rows
from tests.helpers.upstream_answers import WEATHER_TOOL
from tests.integration.conftest import CLIENT_KEY, USER, assert_error, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def demo_chat(**fields: object) -> dict[str, object]:
    return {"model": "demo", "messages": USER, "tools": [WEATHER_TOOL], **fields}


async def test_a_chat_request_is_one_row_with_its_tool_calls_and_bodies(
    database_url: str,
) -> None:
    async with serve(console_config(database_url)) as proxy:
        answer = await proxy.post("/v1/chat/completions", json=demo_chat())
        assert answer.status_code == 200
        [row] = await wait_rows(proxy, 1)
        assert row["api"] == "chat"
        assert row["key"] == "default"
        assert row["model"] == "demo"
        assert row["status"] == 200
        assert row["stream"] is False
        assert row["attempts"] == 1
        assert row["request_id"] == answer.headers["x-request-id"]
        assert row["tool_calls"] == [
            {"name": "get_weather", "source": "structured", "result": "ok", "violations": []}
        ]
        assert set(row["usage"]) == {
            "prompt_tokens",
            "completion_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        }
        assert row["created_at"].endswith("Z")
        assert len(row["created_at"]) == 27
        one = (await proxy.get(f"/v1/logs/{row['id']}", headers=ADMIN)).json()
        assert one["request"] == demo_chat()
        assert one["response"] == answer.json()


async def test_a_streamed_answer_is_stored_assembled(database_url: str) -> None:
    async with serve(console_config(database_url)) as proxy:
        answer = await proxy.post("/v1/chat/completions", json=demo_chat(stream=True))
        assert answer.status_code == 200
        [row] = await wait_rows(proxy, 1)
        assert row["stream"] is True
        assert row["ttft_ms"] is not None
        one = (await proxy.get(f"/v1/logs/{row['id']}", headers=ADMIN)).json()
        message = one["response"]["choices"][0]["message"]
        assert one["response"]["object"] == "chat.completion"
        assert message["tool_calls"][0]["function"]["name"] == "get_weather"
        assert isinstance(message["tool_calls"][0]["function"]["arguments"], str)
        assert one["response"]["choices"][0]["finish_reason"] == "tool_calls"


async def test_every_api_gets_rows_and_refused_keys_none(database_url: str) -> None:
    async with serve(console_config(database_url)) as proxy:
        await proxy.post("/v1/chat/completions", json=demo_chat())
        await proxy.post(
            "/v1/messages",
            json={"model": "demo", "max_tokens": 100, "messages": USER, "stream": True},
        )
        await proxy.post("/v1/responses", json={"model": "demo", "input": "hi"})
        await proxy.post("/v1/chat/completions", json=demo_chat(model="nope"))
        await proxy.post(
            "/v1/chat/completions", json=demo_chat(), headers={"authorization": "Bearer wrong"}
        )
        await proxy.get("/v1/models")
        rows = await wait_rows(proxy, 4)
        assert [row["api"] for row in rows] == ["chat", "responses", "messages", "chat"]
        assert rows[0]["status"] == 404
        assert rows[0]["error_code"] == "model_not_found"
        messages = (await proxy.get(f"/v1/logs/{rows[2]['id']}", headers=ADMIN)).json()
        assert messages["response"]["type"] == "message"
        assert messages["response"]["content"]
        only = await proxy.get("/v1/logs", params={"api": "messages"}, headers=ADMIN)
        assert [row["api"] for row in only.json()["data"]] == ["messages"]


async def test_filters_and_cursor_pages(database_url: str) -> None:
    async with serve(console_config(database_url)) as proxy:
        for _ in range(7):
            await proxy.post("/v1/chat/completions", json=demo_chat())
        await proxy.post("/v1/chat/completions", json=demo_chat(model="nope"))
        rows = await wait_rows(proxy, 8)
        seen, cursor = [], None
        while True:
            params = {"limit": 3, "model": "demo", **({"cursor": cursor} if cursor else {})}
            page = (await proxy.get("/v1/logs", params=params, headers=ADMIN)).json()
            seen += [row["id"] for row in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [row["id"] for row in rows if row["model"] == "demo"]
        assert len(seen) == 7
        by_status = await proxy.get("/v1/logs", params={"status": 404}, headers=ADMIN)
        assert [row["status"] for row in by_status.json()["data"]] == [404]
        newest = rows[0]["created_at"]
        until = await proxy.get("/v1/logs", params={"until": newest}, headers=ADMIN)
        assert len(until.json()["data"]) == 7
        since = await proxy.get("/v1/logs", params={"since": newest}, headers=ADMIN)
        assert [row["id"] for row in since.json()["data"]] == [rows[0]["id"]]
        for bad in ({"limit": "x"}, {"since": "yesterday"}, {"cursor": "%%%"}, {"api": "x"}):
            assert_error(await proxy.get("/v1/logs", params=bad, headers=ADMIN), 400)
        assert_error(await proxy.get("/v1/logs/nope", headers=ADMIN), 404)


async def test_admin_auth(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    async with serve(console_config(url), client_key=None) as proxy:
        assert_error(await proxy.get("/v1/logs"), 401)
        wrong = await proxy.get("/v1/logs", headers={"authorization": f"Bearer {CLIENT_KEY}"})
        assert_error(wrong, 403)
        assert (await proxy.get("/v1/logs", headers=ADMIN)).status_code == 200
        keys = await proxy.get("/v1/keys", headers={"authorization": f"Bearer {ADMIN_KEY}"})
        assert keys.status_code == 200
    async with serve(console_config(url, admin_keys=[""])) as proxy:
        assert (await proxy.get("/v1/logs")).status_code == 200  # loopback
        app = proxy._transport.app  # type: ignore[attr-defined]
        remote = httpx.ASGITransport(app=app, client=("203.0.113.9", 5000))
        async with httpx.AsyncClient(transport=remote, base_url="http://t") as outside:
            error = assert_error(await outside.get("/v1/logs"), 403)
            assert "server.admin_keys" in error["message"]


async def test_without_a_database_the_console_is_a_404_naming_it() -> None:
    async with serve(console_config(None)) as proxy:
        for path in ("/v1/logs", "/v1/keys", "/v1/logs/x"):
            error = assert_error(await proxy.get(path, headers=ADMIN), 404)
            assert "server.database" in error["message"]


async def test_bodies_metadata_and_off(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    async with serve(console_config(url, request_log={"bodies": "metadata"})) as proxy:
        await proxy.post("/v1/chat/completions", json=demo_chat())
        [row] = await wait_rows(proxy, 1)
        one = (await proxy.get(f"/v1/logs/{row['id']}", headers=ADMIN)).json()
        assert "request" not in one
        assert "response" not in one
        assert one["tool_calls"][0]["result"] == "ok"
    url = f"sqlite:///{tmp_path}/o.db"
    async with serve(console_config(url, request_log={"bodies": "off"})) as proxy:
        await proxy.post("/v1/chat/completions", json=demo_chat())
        await wait_rows(proxy, 0)


async def test_a_stream_that_failed_before_its_first_token_is_logged_as_a_stream(
    tmp_path: object,
) -> None:
    """With `bodies: metadata` no body tells the writer it was a stream: the record does."""
    url = f"sqlite:///{tmp_path}/s.db"
    down = httpx.MockTransport(lambda request: httpx.Response(500, json={"error": "down"}))
    config = console_config(url, request_log={"bodies": "metadata"})
    async with serve(config, transport=down) as proxy:
        body = {"model": "mini", "messages": USER, "stream": True}
        answer = await proxy.post("/v1/chat/completions", json=body)
        assert answer.status_code >= 500
        await proxy.post("/v1/chat/completions", json={**body, "stream": False})
        rows = await wait_rows(proxy, 2)
        assert [(row["stream"], row["ttft_ms"]) for row in rows] == [(False, None), (True, None)]


async def test_ui_without_a_database_is_an_html_404_naming_it() -> None:
    async with serve(console_config(None)) as proxy:
        for path in ("/ui", "/ui/login", "/ui/models"):
            answer = await proxy.get(path)
            assert answer.status_code == 404
            assert answer.headers["content-type"].startswith("text/html")
            assert "<html" in answer.text
            assert "server.database" in answer.text
