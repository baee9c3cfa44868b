"""The console in a real proxy process: hundreds of concurrent requests all answered and all
logged, no configured secret in the database file, and /ui in Debian's Chromium driven by
Playwright: signed in, every page opened, no console error, no request leaving the proxy, a
tool call's hostile arguments shown as text. Its screenshots go to the test's own directory
(docs/console-*.png are taken of the shipped config.yaml's demo traffic, not of this test's)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import openai
import pytest

from tests.e2e.conftest import CLIENT_KEY, run_proxy

pytestmark = pytest.mark.e2e
ADMIN_KEY = "admin-key-SECRET-e2e-555"
HOSTILE = "<img src=x onerror=alert(1)>"
TOOL = {
    "type": "function",
    "function": {
        "name": "render_note",
        "parameters": {
            "type": "object",
            "properties": {"html": {"type": "string", "enum": [HOSTILE]}},
            "required": ["html"],
        },
    },
}


def console_yaml(db: Path) -> str:
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
  admin_keys: ["{ADMIN_KEY}"]
  database: {{url: "sqlite:///{db}"}}
providers:
  demo: {{kind: demo}}
models:
  - {{name: demo, provider: demo, model: demo}}
  - {{name: demo-sloppy, provider: demo, model: demo-sloppy, tool_calls: {{recover: json}}}}
"""


async def _load(base: str, count: int) -> list[int]:
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as c:
        answers = await asyncio.gather(
            *(c.post("/v1/chat/completions", json=body) for _ in range(count))
        )
    return [answer.status_code for answer in answers]


def _logged(base: str) -> int:
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    total, cursor = 0, None
    while True:
        params = {"limit": "500", **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{base}/v1/logs", params=params, headers=admin).json()
        total += len(page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            return total


def test_load_every_request_answered_and_logged(tmp_path: Path) -> None:
    db = tmp_path / "toolrelay.db"
    with run_proxy(console_yaml(db), tmp_path) as proxy:
        base = f"http://127.0.0.1:{proxy.port}"
        statuses = asyncio.run(_load(base, 300))
        assert statuses == [200] * 300
        for _ in range(100):  # the writer is off the request path: wait for it, untimed
            if _logged(base) == 300:
                break
            asyncio.run(asyncio.sleep(0.1))
        assert _logged(base) == 300
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("toolrelay.db*"))
    for secret in (CLIENT_KEY, ADMIN_KEY):
        assert secret.encode() not in raw


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_the_pages_in_chromium(tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    db = tmp_path / "toolrelay.db"
    with run_proxy(console_yaml(db), tmp_path) as proxy:
        base = f"http://127.0.0.1:{proxy.port}"
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=CLIENT_KEY)
        client.chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "note it"}], tools=[TOOL]
        )
        for model in ("demo", "demo-sloppy"):
            client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": "weather?"}],
                tools=[WEATHER],
                stream=False,
            )
        with playwright.sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors: list[str] = []
            outside: list[str] = []
            dialogs: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on(
                "request",
                lambda r: None if r.url.startswith((base, "data:")) else outside.append(r.url),
            )
            page.goto(f"{base}/ui")
            assert page.url.endswith("/ui/login")
            page.fill("input[name=key]", ADMIN_KEY)
            page.click("button")
            page.wait_for_url(f"{base}/ui")
            cookie = next(c for c in page.context.cookies() if c["name"] == "toolrelay_session")
            assert cookie["httpOnly"]
            assert cookie["sameSite"] == "Strict"
            assert ADMIN_KEY not in cookie["value"]
            page.screenshot(path=str(tmp_path / "console-requests.png"), full_page=True)
            rows = page.locator("#rows tr")
            assert rows.count() == 3
            page.locator("#rows tr").last.locator("a").click()
            page.wait_for_selector(".conversation")
            assert HOSTILE in page.locator(".args").first.inner_text()
            assert page.locator("main img").count() == 0
            page.screenshot(path=str(tmp_path / "console-request.png"), full_page=True)
            for name in ("models", "spend", "keys", "mcp"):
                page.goto(f"{base}/ui/{name}")
                assert page.locator("main").count() == 1
                page.screenshot(path=str(tmp_path / f"console-{name}.png"), full_page=True)
            browser.close()
        assert errors == []
        assert outside == []
        assert dialogs == []


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "maximum": 7}},
            "required": ["city", "days"],
        },
    },
}
