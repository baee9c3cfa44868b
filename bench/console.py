"""The console's costs (issue 39), side by side: in-process CPU per non-stream chat request
with the request log on (bodies full, SQLite) and off, and /v1/logs' query time over a
million rows in SQLite (first page, a deep cursor page, a filtered page).

    python -m bench.console [--requests N] [--rows N]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.config import parse_config
from app.main import create_app

BODY = {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
RAW: dict[str, Any] = {
    "providers": {"demo": {"kind": "demo"}},
    "models": [{"name": "demo", "provider": "demo", "model": "demo"}],
}


async def cpu_per_request(database: str | None, count: int) -> float:
    raw = copy.deepcopy(RAW)
    if database:
        raw["server"] = {"database": {"url": database}}
    app = create_app(parse_config(raw, "bench"))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://b") as client,
    ):
        for _ in range(200):
            await client.post("/v1/chat/completions", json=BODY)
        start = time.process_time()
        for _ in range(count // 32):
            await asyncio.gather(
                *(client.post("/v1/chat/completions", json=BODY) for _ in range(32))
            )
        if app.state.proxy.console is not None:
            await app.state.proxy.console.writer.flush()  # the writer's CPU counted too
        return (time.process_time() - start) / (count // 32 * 32) * 1e6


async def log_queries(path: Path, rows: int) -> dict[str, float]:
    url = f"sqlite:///{path}"
    raw = copy.deepcopy(RAW) | {"server": {"database": {"url": url}}}
    app = create_app(parse_config(raw, "bench"))
    async with app.router.lifespan_context(app):
        pass  # the schema made
    db = sqlite3.connect(path)
    now = time.time_ns() // 1000
    models = ["demo", "gpt-4o-mini", "claude", "other"]
    db.executemany(
        "INSERT INTO requests (id, created_at, request_id, api, stream, key, model, status,"
        " duration_ms, attempts, prompt_tokens, completion_tokens, cache_read_tokens,"
        " cache_write_tokens, tool_calls) VALUES (?,?,?,?,0,?,?,?,1.0,1,1,1,0,0,'[]')",
        (
            (f"{i:016x}", now - i * 1000, f"r{i}", "chat", f"k{i % 50}", models[i % 4], 200)
            for i in range(rows)
        ),
    )
    db.commit()
    db.close()
    timings = {}
    app = create_app(parse_config(raw, "bench"))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b") as client,
    ):
        for name, params in (
            ("first page", {}),
            ("model filter", {"model": "claude"}),
            ("key filter", {"key": "k7", "limit": "500"}),
        ):
            start = time.perf_counter()
            page = (await client.get("/v1/logs", params=params)).json()
            timings[name] = (time.perf_counter() - start) * 1000
        cursor = page["next_cursor"]
        for _ in range(random.randint(50, 60)):
            page = (await client.get("/v1/logs", params={"cursor": cursor, "limit": "500"})).json()
            cursor = page["next_cursor"]
        start = time.perf_counter()
        await client.get("/v1/logs", params={"cursor": cursor, "limit": "500"})
        timings["deep cursor page (500 rows)"] = (time.perf_counter() - start) * 1000
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3200)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(2):
            off = asyncio.run(cpu_per_request(None, args.requests))
            on = asyncio.run(cpu_per_request(f"sqlite:///{scratch}/on.db", args.requests))
            print(f"CPU per request: log off {off:.1f} us, log on {on:.1f} us, +{on - off:.1f} us")  # noqa: T201
        for name, ms in asyncio.run(log_queries(Path(scratch) / "big.db", args.rows)).items():
            print(f"/v1/logs over {args.rows} rows, {name}: {ms:.1f} ms")  # noqa: T201


if __name__ == "__main__":
    main()
