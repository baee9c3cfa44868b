"""Issue 38's speed budget for the Responses WebSocket transport: ToolRelay's CPU per streamed
event over a WebSocket against the same stream over HTTP (SSE), side by side in one run.

One mock upstream (bench/mock_upstream.py: a streamed tool call of `--arg-chunks` argument
deltas) and one ToolRelay process; `-c` clients each send the same streamed `/v1/responses`
request back to back, over HTTP (a new request each time, keep-alive) and over a WebSocket
(one connection per client, one `response.create` after another). Every answer is checked to
end with `response.completed` and to carry the same number of events. The two are measured in
alternating order over `--rounds`, and the proxy process's CPU (utime + stime from /proc) is
divided by the events it streamed.

    python -m bench.websocket                     # ~1 min
    python -m bench.websocket --rounds 6 --duration 8 -c 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench import procstat, servers

MODEL = "bench-openai"
TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look a thing up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
BODY = {"model": MODEL, "input": "look it up", "tools": [TOOL], "store": False, "stream": True}
Operation = Callable[[], Awaitable[int]]
"""One streamed response; returns how many events it carried."""


@dataclass
class Cell:
    name: str
    responses: int = 0
    events: int = 0
    seconds: float = 0.0
    cpu: float = 0.0

    def line(self) -> str:
        per_event = 1000 * self.cpu / max(self.events, 1)
        per_response = 1000 * self.cpu / max(self.responses, 1)
        rate = self.responses / max(self.seconds, 1e-9)
        return (
            f"| {self.name} | {self.responses} | {self.events // max(self.responses, 1)} | "
            f"{rate:.0f} | {per_response:.3f} | {per_event * 1000:.1f} |"
        )


def config(mock_port: int) -> str:
    return f"""
providers:
  mock: {{kind: openai, base_url: "http://127.0.0.1:{mock_port}/v1", api_key: sk-bench}}
models:
  - {{name: {MODEL}, provider: mock, model: mock-model}}
"""


def http_op(client: httpx.AsyncClient) -> Operation:
    async def run() -> int:
        async with client.stream("POST", "/v1/responses", json=BODY) as answer:
            body = await answer.aread()
        frames = [frame for frame in body.split(b"\n\n") if frame.strip()]
        last = json.loads(frames[-1].split(b"data: ", 1)[1])
        if answer.status_code != 200 or last["type"] != "response.completed":
            raise RuntimeError(f"HTTP: {answer.status_code} {body[-300:]!r}")
        return len(frames)

    return run


def ws_op(socket: ClientConnection) -> Operation:
    message = json.dumps({"type": "response.create", **BODY})

    async def run() -> int:
        await socket.send(message)
        count = 0
        while True:
            event = json.loads(await socket.recv())
            count += 1
            if event["type"] == "response.completed":
                return count
            if event["type"] in ("error", "response.failed", "response.incomplete"):
                raise RuntimeError(f"WebSocket: {event}")

    return run


async def load(ops: list[Operation], seconds: float, cell: Cell | None) -> None:
    """Each op run back to back by its own client for `seconds`; counted into `cell`."""
    deadline = time.perf_counter() + seconds
    responses = events = 0

    async def client(op: Operation) -> None:
        nonlocal responses, events
        while time.perf_counter() < deadline:
            carried = await op()  # not `events += await op()`: that reads `events` before
            events += carried  # the await, and the other clients' counts would be lost
            responses += 1

    await asyncio.gather(*(client(op) for op in ops))
    if cell is not None:
        cell.responses += responses
        cell.events += events


async def measure(cell: Cell, ops: list[Operation], pid: int, args: argparse.Namespace) -> None:
    await load(ops, args.warmup, None)
    pids = procstat.tree(pid)
    before, started = procstat.cpu_seconds(pids), time.perf_counter()
    await load(ops, args.duration, cell)
    cell.seconds += time.perf_counter() - started
    cell.cpu += procstat.cpu_seconds(pids) - before


async def run(args: argparse.Namespace, pid: int) -> list[Cell]:
    base = f"http://127.0.0.1:{args.port}"
    limits = httpx.Limits(max_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        sockets = [
            await connect(
                f"ws://127.0.0.1:{args.port}/v1/responses",
                max_size=None,
                compression=None if args.compression == "none" else "deflate",
            )
            for _ in range(args.concurrency)
        ]
        try:
            http = Cell("HTTP (SSE)")
            ws = Cell("WebSocket")
            cells = [(http, [http_op(client)] * args.concurrency), (ws, [*map(ws_op, sockets)])]
            for round_ in range(args.rounds):
                for cell, ops in cells if round_ % 2 == 0 else cells[::-1]:
                    await measure(cell, ops, pid, args)
            return [http, ws]
        finally:
            for socket in sockets:
                await socket.close()


def report(cells: list[Cell], args: argparse.Namespace) -> str:
    http, ws = cells
    ratio = (ws.cpu / max(ws.events, 1)) / max(http.cpu / max(http.events, 1), 1e-12)
    lines = [
        f"ToolRelay, one process; {args.concurrency} clients, {args.rounds} rounds of "
        f"{args.duration:.0f} s each way, {args.arg_chunks} argument deltas per stream, "
        f"{args.chunk_delay_ms:g} ms between upstream events, WebSocket compression: "
        f"{args.compression}",
        "",
        "| transport | responses | events each | responses/s | CPU ms/response | CPU µs/event |",
        "|---|---|---|---|---|---|",
        http.line(),
        ws.line(),
        "",
        f"WebSocket / HTTP CPU per event: {ratio:.3f} (budget: <= 1)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18301, help="ToolRelay's")
    parser.add_argument("--mock-port", type=int, default=18300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per cell")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("-c", "--concurrency", type=int, default=4)
    parser.add_argument("--arg-chunks", type=int, default=50)
    parser.add_argument(
        "--chunk-delay-ms",
        type=float,
        default=1.0,
        help="the mock's pause between events (bench/run's default; 0: the whole stream in one "
        "read, which lets HTTP write many events at once where a WebSocket writes one a frame)",
    )
    parser.add_argument(
        "--compression",
        choices=["deflate", "none"],
        default="deflate",
        help="permessage-deflate offered by the WebSocket clients (Codex offers it)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ws-") as scratch:
        print(report(start_and_run(args, Path(scratch)), args))  # noqa: T201


def start_and_run(args: argparse.Namespace, scratch: Path) -> list[Cell]:
    started: list[servers.Server] = []
    try:
        mock = [sys.executable, "-m", "bench.mock_upstream", "--port", str(args.mock_port)]
        mock += ["--arg-chunks", str(args.arg_chunks), "--chunk-delay-ms", str(args.chunk_delay_ms)]
        started.append(
            servers.start(mock, log=scratch / "mock.log", ready=(args.mock_port, "/health"))
        )
        path = scratch / "toolrelay.yaml"
        path.write_text(config(args.mock_port))
        command = [sys.executable, "-m", "app", "--config", str(path)]
        command += ["--host", "127.0.0.1", "--port", str(args.port)]
        proxy = servers.start(command, log=scratch / "toolrelay.log", ready=(args.port, "/health"))
        started.append(proxy)
        return asyncio.run(run(args, proxy.pid))
    finally:
        for server in reversed(started):
            server.stop()


if __name__ == "__main__":
    main()
