"""Issue 40's in-process figures, for this tree and another side by side: CPU per non-stream
request and per 10-chunk stream (the bench's payload, OpenAI -> OpenAI, through `create_app`
driven by an in-process ASGI client, 8 at a time, against bench/mock_upstream.py in a process
of its own, so the relay's real upstream client runs; the client's own CPU, measured against
a bare ASGI app, is subtracted), `import app.main`'s time, and
the peak RSS of `python -m app` on a plain config (demo and openai providers only) after a few
requests. The trees take turns round after round; each figure is the median over rounds.

    python -m bench.speed [--before ../base-tree] [--rounds 5] [--requests 800]
    python -m bench.speed --profile stream      # cProfile of the stream cell, top functions

Indicative on a shared machine: the rounds interleave so load drifts hit both trees alike.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.payload import openai_request

HERE = Path(__file__).resolve().parents[1]
CHUNKS = 10
CONCURRENCY = 8
RAW: dict[str, Any] = {
    "providers": {
        "demo": {"kind": "demo"},
        "openai": {"kind": "openai", "base_url": "http://127.0.0.1:PORT/v1", "api_key": "sk-b"},
    },
    "models": [
        {"name": "demo", "provider": "demo", "model": "demo"},
        {"name": "bench-openai", "provider": "openai", "model": f"mock-model-n{CHUNKS}"},
    ],
}
PLAIN_YAML = """providers:
  demo: {kind: demo}
  openai: {kind: openai, base_url: "http://127.0.0.1:9/v1", api_key: sk-b}
models:
  - {name: demo, provider: demo, model: demo}
  - {name: gpt, provider: openai, model: gpt-4o-mini}
"""


def start_mock(port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "bench.mock_upstream", "--port", str(port)]
    mock = subprocess.Popen(command, cwd=HERE)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return mock
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the mock upstream did not start")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def cpu_per_request(
    stream: bool,
    count: int,
    port: int,
    profile: cProfile.Profile | None,
    extra: dict[str, Any] | None = None,
) -> float:
    """CPU µs per request: `count` requests, CONCURRENCY at a time, after a warm-up. `extra`:
    what a feature adds to the config (its top-level sections; its `providers`, merged)."""
    from app.config import parse_config  # noqa: PLC0415 - the tree under test's
    from app.main import create_app  # noqa: PLC0415

    raw = json.loads(json.dumps(RAW).replace("PORT", str(port)))
    for section, value in (extra or {}).items():
        raw[section] = raw.get(section, {}) | value
    app = create_app(parse_config(raw, "bench"))
    body = openai_request("bench-openai", stream=stream)
    headers = {"content-type": "application/json"}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://relay") as client,
    ):

        async def one() -> None:
            response = await client.post("/v1/chat/completions", content=body, headers=headers)
            assert response.status_code == 200, response.text

        for _ in range(100):
            await one()
        batches = max(1, count // CONCURRENCY)
        if profile is not None:
            profile.enable()
        start = time.process_time()
        for _ in range(batches):
            await asyncio.gather(*(one() for _ in range(CONCURRENCY)))
        spent = time.process_time() - start
        if profile is not None:
            profile.disable()
        return spent / (batches * CONCURRENCY) * 1e6


def client_only(count: int) -> float:
    """The harness's own CPU per request (httpx client + ASGITransport) against a bare ASGI app,
    to subtract: what is left is the proxy's."""

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def run() -> float:
        transport = httpx.ASGITransport(app=bare)
        async with httpx.AsyncClient(transport=transport, base_url="http://relay") as client:
            body = openai_request("x", stream=False)
            for _ in range(100):
                await client.post("/", content=body)
            start = time.process_time()
            for _ in range(max(1, count // CONCURRENCY)):
                await asyncio.gather(*(client.post("/", content=body) for _ in range(8)))
            return (time.process_time() - start) / (count // CONCURRENCY * CONCURRENCY) * 1e6

    return asyncio.run(run())


def import_ms(tree: Path) -> float:
    """`import app.main`'s cumulative time (-X importtime), in ms."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import app.main"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"\|\s+(\d+) \|\s*app\.main$", done.stderr, re.MULTILINE)
    assert found is not None
    return int(found.group(1)) / 1000


def serving_rss_mb(tree: Path) -> float:
    """Peak RSS (VmHWM) of `python -m app` on the plain config after 50 demo requests, one
    stream among them."""
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "config.yaml"
        config.write_text(PLAIN_YAML)
        command = [sys.executable, "-m", "app", "--config", str(config), "--port", str(port)]
        command += ["--host", "127.0.0.1"]
        process = subprocess.Popen(
            command,
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                try:
                    httpx.get(f"{base}/health", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            for index in range(50):
                body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
                httpx.post(f"{base}/v1/chat/completions", json=body | {"stream": index == 0})
            status = Path(f"/proc/{process.pid}/status").read_text()
        finally:
            process.terminate()
            process.wait(timeout=10)
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found is not None
    return int(found.group(1)) / 1024


FEATURES = {
    "plain": "",
    "mcp (a stdio server)": "mcp:\n  servers:\n    tools: {command: [python, -c, pass]}\n",
    "bedrock (SigV4)": "EXTRA  aws: {kind: bedrock, region: us-east-1, base_url: 'http://127.0.0.1:9'}\n",
    "vertex": "EXTRA  gcp: {kind: vertex, project: p, region: us-east5, base_url: 'http://127.0.0.1:9'}\n",
    "redis store": "server:\n  store: {kind: redis, url: 'redis://127.0.0.1:9/0', timeout: 0.2}\n",
    "tracing (OTLP)": "server:\n  tracing: {otlp_endpoint: 'http://127.0.0.1:9'}\n",
    "database (SQLite)": "server:\n  database: {url: 'sqlite:///./speed.db'}\n",
}
"""Each feature's addition to the plain config (EXTRA: a provider, put under `providers:`)."""

FEATURE_RAW: dict[str, dict[str, Any]] = {
    "plain": {},
    "mcp (a stdio server)": {"mcp": {"servers": {"tools": {"command": ["python", "-c", "pass"]}}}},
    "bedrock (SigV4)": {
        "providers": {
            "aws": {"kind": "bedrock", "region": "us-east-1", "base_url": "http://127.0.0.1:9"}
        }
    },
    "vertex": {
        "providers": {
            "gcp": {
                "kind": "vertex",
                "project": "p",
                "region": "us-east5",
                "base_url": "http://127.0.0.1:9",
            }
        }
    },
    "redis store": {"server": {"store": {"kind": "redis", "url": "redis://127.0.0.1:REDIS/0"}}},
    "tracing (OTLP)": {"server": {"tracing": {"otlp_endpoint": "http://127.0.0.1:OTLP"}}},
    "database (SQLite)": {"server": {"database": {"url": "sqlite:///./speed.db"}}},
}
"""The same additions as config sections, for the CPU per request beside each: the Redis store
on a private redis-server, the spans sent to a stand-in collector (`python -m http.server`,
which answers 501: each batch is encoded and sent, then dropped without a retry)."""

STARTED = """
import asyncio, resource, sys
from app.config import load_config
from app.main import create_app
app = create_app(load_config(sys.argv[1]))
async def serve():
    async with app.router.lifespan_context(app):
        pass
asyncio.run(serve())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def feature_rss(tree: Path) -> dict[str, float]:
    """Peak RSS (MB) of a process that built the app and ran its lifespan, per feature."""
    found = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, extra in FEATURES.items():
            config = Path(directory) / "config.yaml"
            text = PLAIN_YAML + extra if not extra.startswith("EXTRA") else PLAIN_YAML
            if extra.startswith("EXTRA"):
                text = text.replace("providers:\n", "providers:\n" + extra[5:])
            config.write_text(text)
            done = subprocess.run(
                [sys.executable, "-c", STARTED, str(config)],
                cwd=directory,
                env={**os.environ, "PYTHONPATH": str(tree), "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}
                | {"AWS_SECRET_ACCESS_KEY": "fake"},
                capture_output=True,
                text=True,
                check=True,
            )
            found[name] = float(done.stdout.splitlines()[-1])
    return found


FEATURE_PASSES = 5


def feature_cpu(requests: int, port: int, redis_port: int, otlp_port: int) -> dict[str, float]:
    """CPU µs per non-stream request to the openai mock with the plain config (the harness's
    own subtracted), and what each feature adds to it: measured in passes, each feature right
    after a plain run, so the machine's drift cancels (in this interpreter: the tree on
    PYTHONPATH); medians over the passes."""
    harness = client_only(requests)
    found: dict[str, list[float]] = {name: [] for name in FEATURE_RAW}
    with tempfile.TemporaryDirectory() as directory:
        os.chdir(directory)  # the SQLite file's folder
        for _ in range(FEATURE_PASSES):
            for name, section in FEATURE_RAW.items():
                text = json.dumps(section).replace("REDIS", str(redis_port))
                extra = json.loads(text.replace("OTLP", str(otlp_port)))
                plain = asyncio.run(cpu_per_request(False, requests, port, None)) - harness
                if name == "plain":
                    found[name].append(plain)
                    continue
                spent = asyncio.run(cpu_per_request(False, requests, port, None, extra))
                found[name].append(spent - harness - plain)
    return {name: statistics.median(values) for name, values in found.items()}


def worker(requests: int, port: int) -> dict[str, float]:
    """One round in this interpreter (the tree on PYTHONPATH is the one measured)."""
    harness = client_only(requests)
    non_stream = asyncio.run(cpu_per_request(False, requests, port, None))
    stream = asyncio.run(cpu_per_request(True, requests, port, None))
    return {
        "non-stream CPU µs": non_stream - harness,
        "10-chunk stream CPU µs": stream - harness,
        "harness µs": harness,
    }


WORKER_BOOT = """
import sys
here, tree = sys.argv[1:3]
del sys.argv[1:3]
sys.path.insert(0, here)
import bench.speed
sys.path[0] = tree
bench.speed.main()
"""
"""A round's process: this file's code (imported from this tree), then the `app` of the tree
measured. (`python -m bench.speed` with that tree on PYTHONPATH would still import this tree's
`app`: -m puts the working directory first on sys.path.)"""


def worker_command(tree: Path) -> list[str]:
    return [sys.executable, "-c", WORKER_BOOT, str(HERE), str(tree), "--worker"]


def one_round(tree: Path, requests: int, port: int) -> dict[str, float]:
    command = [*worker_command(tree), "--requests", str(requests)]
    done = subprocess.run(
        [*command, "--mock-port", str(port)],
        cwd=HERE,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    figures["import app.main ms"] = import_ms(tree)
    figures["serving peak RSS MB"] = serving_rss_mb(tree)
    return figures


def profile_cell(stream: bool, requests: int, port: int, top: int) -> None:
    profile = cProfile.Profile()
    asyncio.run(cpu_per_request(stream, requests, port, profile))
    stats = pstats.Stats(profile).sort_stats("tottime")
    stats.print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", choices=["stream", "non-stream"])
    parser.add_argument(
        "--features", action="store_true", help="peak RSS and CPU per request with each feature"
    )
    parser.add_argument("--redis-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--otlp-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--mock-port", type=int, default=0, help="0: start one on a free port")
    args = parser.parse_args()
    if args.worker:
        figures = (
            feature_cpu(args.requests, args.mock_port, args.redis_port, args.otlp_port)
            if args.features
            else worker(args.requests, args.mock_port)
        )
        print(json.dumps(figures))  # noqa: T201
        return
    port = args.mock_port or free_port()
    mock = None if args.mock_port else start_mock(port)
    try:
        if args.features:
            features(args, port)
        else:
            run(args, port)
    finally:
        if mock is not None:
            mock.terminate()
            mock.wait(timeout=10)


def features(args: argparse.Namespace, port: int) -> None:
    """Per feature: peak RSS after start-up, and CPU per non-stream request (the plain
    config's, and what each feature adds to it; medians of the rounds, the trees taking
    turns), for this tree and --before's."""
    trees = [HERE] if args.before is None else [args.before, HERE]
    rss = {tree: feature_rss(tree.resolve()) for tree in trees}
    redis_port, otlp_port = free_port(), free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    collector = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(otlp_port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cpu: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    try:
        for _ in range(args.rounds):
            for tree in trees:
                command = [*worker_command(tree.resolve()), "--features"]
                command += ["--requests", str(args.requests), "--mock-port", str(port)]
                done = subprocess.run(
                    [*command, "--redis-port", str(redis_port), "--otlp-port", str(otlp_port)],
                    cwd=HERE,
                    env=os.environ.copy(),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                cpu[tree].append(json.loads(done.stdout.splitlines()[-1]))
    finally:
        for server in (redis, collector):
            server.terminate()
            server.wait(timeout=10)
    print("| config | " + " | ".join(f"{t.name}: RSS MB, CPU µs/request" for t in trees) + " |")  # noqa: T201
    print("| --- |" + " --- |" * len(trees))  # noqa: T201
    for name in FEATURES:
        form = ".0f" if name == "plain" else "+.0f"
        cells = [
            f"{rss[t][name]:.1f}, {statistics.median(r[name] for r in cpu[t]):{form}}"
            for t in trees
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")  # noqa: T201


def run(args: argparse.Namespace, port: int) -> None:
    if args.profile:
        profile_cell(args.profile == "stream", args.requests, port, args.top)
        return
    trees = {"after": HERE} if args.before is None else {"before": args.before, "after": HERE}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        for name, tree in trees.items():
            results[name].append(one_round(tree.resolve(), args.requests, port))
            print(f"round {round_ + 1} {name}: {results[name][-1]}", file=sys.stderr)  # noqa: T201
    figures = list(results[next(iter(trees))][0])
    print("| figure | " + " | ".join(trees) + " |")  # noqa: T201
    print("| --- |" + " --- |" * len(trees))  # noqa: T201
    for figure in figures:
        cells = [f"{statistics.median(r[figure] for r in results[n]):.1f}" for n in trees]
        print(f"| {figure} | " + " | ".join(cells) + " |")  # noqa: T201


if __name__ == "__main__":
    main()
