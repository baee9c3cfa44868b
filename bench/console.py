"""The console's costs (issue 39), side by side: in-process CPU per non-stream chat request
(c=32) and per streamed chunk with the request log on (bodies full, SQLite) and off, the
writer's and SQLite's thread's CPU included; and /v1/logs' query time over a million rows in
SQLite (first page, a deep cursor page, filtered pages).

Each figure is one fresh process (`cpu_per_request` / `cpu_per_chunk` below, run in the tree
given), the trees and modes interleaved and repeated, medians printed: the machine is shared,
and a single run's noise is larger than the difference measured.

    python -m bench.console [--rounds N] [--requests N] [--rows N] [--before DIR]

`--before DIR`: also measure another checkout (e.g. `git worktree add /tmp/base main`) in the
same run, interleaved with this one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import random
import sqlite3
import statistics
import subprocess
import sys
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
TOOL_RESULT = " ".join(f"w{i}" for i in range(400))
STREAM_BODY = {
    "model": "demo",
    "stream": True,
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": TOOL_RESULT},
    ],
}
"""A streamed answer of 60 chunks (the demo quotes the tool result)."""


def _app(database: str | None) -> Any:
    raw = copy.deepcopy(RAW)
    if database:
        raw["server"] = {"database": {"url": database}}
    return create_app(parse_config(raw, "bench"))


async def side_by_side_cpu(
    database: str, count: int, body: dict[str, Any], c: int, block: int
) -> Any:
    """CPU microseconds per request of two proxies in one process, the log off and on, their
    turns (`block` batches of `c` concurrent requests) interleaved, so the machine's load
    falls on both alike; each turn of the log-on proxy ends waiting for its writer, whose CPU
    (and SQLite's thread's) is counted with it. Returns (off, on, chunks per answer)."""
    apps = {False: _app(None), True: _app(database)}
    spent = {False: 0.0, True: 0.0}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for on, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            clients[on] = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://b")
            )
        writer = apps[True].state.proxy.console.writer
        first = await clients[False].post("/v1/chat/completions", json=body)
        chunks = max(1, first.text.count("data:"))
        turns = count // (c * block)
        for turn in range(-2, turns):
            for on in (turn % 2 == 0, turn % 2 != 0):
                start = time.process_time()
                for _ in range(block):
                    await asyncio.gather(
                        *(clients[on].post("/v1/chat/completions", json=body) for _ in range(c))
                    )
                if on:
                    await writer.flush()
                if turn >= 0:  # the first two turns warm both up
                    spent[on] += time.process_time() - start
    per = turns * block * c
    return spent[False] / per * 1e6, spent[True] / per * 1e6, chunks


async def cpu_per_request(database: str, count: int) -> Any:
    """Non-stream chat requests at c=32."""
    return await side_by_side_cpu(database, count, BODY, 32, 4)


async def cpu_per_chunk(database: str, count: int) -> Any:
    """Streamed answers of 60 chunks at c=8: per chunk."""
    off, on, chunks = await side_by_side_cpu(database, count, STREAM_BODY, 8, 3)
    return off / chunks, on / chunks, chunks


RUN_ONE = """
{source}
with tempfile.TemporaryDirectory() as scratch:
    print(*asyncio.run({function}(f"sqlite:///{{scratch}}/log.db", {count}))[:2])
"""


def _one(tree: Path, function: str, count: int) -> tuple[float, float]:
    """One measurement in a fresh process in `tree` (this file's functions, that tree's app):
    (log off, log on)."""
    source = Path(__file__).read_text().split("RUN_ONE = ")[0]
    code = RUN_ONE.format(source=source, function=function, count=count)
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=tree, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    off, on = done.stdout.strip().splitlines()[-1].split()
    return float(off), float(on)


def side_by_side(trees: dict[str, Path], rounds: int, requests: int) -> None:
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for name, tree in trees.items():
            for function, count in (("cpu_per_request", requests), ("cpu_per_chunk", 240)):
                figures.setdefault((name, function), []).append(_one(tree, function, count))
    for (name, function), runs in figures.items():
        off = statistics.median(off for off, _ in runs)
        on = statistics.median(on for _, on in runs)
        delta = statistics.median(on - off for off, on in runs)
        each = " ".join(f"{on - off:+.1f}" for off, on in runs)
        print(  # noqa: T201
            f"{name}: {function}, median of {rounds} runs: log off {off:.2f} us, log on "
            f"{on:.2f} us, on - off {delta:+.2f} us (each run: {each})"
        )


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
            if cursor is None:
                break
            page = (await client.get("/v1/logs", params={"cursor": cursor, "limit": "500"})).json()
            cursor = page["next_cursor"]
        if cursor is not None:
            start = time.perf_counter()
            await client.get("/v1/logs", params={"cursor": cursor, "limit": "500"})
            timings["deep cursor page (500 rows)"] = (time.perf_counter() - start) * 1000
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=3200)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--before", type=Path, help="another checkout, measured alongside")
    args = parser.parse_args()
    trees = {"this tree": Path.cwd()}
    if args.before is not None:
        trees = {"before": args.before, **trees}
    side_by_side(trees, args.rounds, args.requests)
    if args.rows:
        with tempfile.TemporaryDirectory() as scratch:
            for name, ms in asyncio.run(log_queries(Path(scratch) / "big.db", args.rows)).items():
                print(f"/v1/logs over {args.rows} rows, {name}: {ms:.1f} ms")  # noqa: T201


if __name__ == "__main__":
    main()
