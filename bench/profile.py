"""Where ToolRelay's CPU goes, by layer: `python -m bench.profile` (issue 23).

Starts the bench's mock and ToolRelay (by its documented command `python -m app`, or under
Granian with `--server granian`), drives the bench's scenarios with the bench's own checking
load generator, and samples the proxy with py-spy (`pip install py-spy`; a sampling profiler in
its own process, so it does not slow the proxy's calls down the way cProfile does). Every
sample is charged to a layer by the innermost frame of its stack that belongs to a known
module (stdlib, asyncio, pydantic and other helpers are transparent: their time goes to the
layer that called them). The samples' shares are then scaled by the CPU the proxy's process
tree spent per request in the same window (/proc), which gives

- per request: µs of CPU per non-stream request, per layer;
- per chunk: (µs per long stream - µs per short stream) / (events in one - in the other),
  per layer, the bench's own definition of CPU per streamed chunk.

    python -m bench.profile                          # the default scenarios, ~2 min
    python -m bench.profile --scenario "stream c=8" --duration 10 --rate 500
    python -m bench.profile --server granian --granian bench/.scratch/granian-venv/bin/granian
    python -m bench.profile --top 25                 # ... and each scenario's hottest functions

Only 127.0.0.1 is used. The run's logs and py-spy's raw stacks go to
bench/.scratch/profile/<time>/.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import inspect
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import uvloop

from bench import peers, servers
from bench.load import LoadResult, LoadSpec, run_load
from bench.scenarios import SCENARIOS, Scenario, Target, stream_events
from bench.servers import Server

SCRATCH = peers.SCRATCH / "profile"
DEFAULT_SCENARIOS = (
    "non-stream c=32",
    "anthropic non-stream c=32",
    "stream c=8",
    "anthropic stream c=8",
)

# --- layers ------------------------------------------------------------------------------------

LAYERS = (
    "server (uvicorn / httptools / uvloop / granian)",
    "ASGI (Starlette / FastAPI)",
    "our middleware (app/api/middleware.py)",
    "request parse + validate (app/openai_types.py, pydantic)",
    "handlers + routing (app/api, app/routing)",
    "relay (app/relay)",
    "SSE decode (app/sse.py SSEDecoder)",
    "translate (app/translators)",
    "tool-call audit (app/toolcalls)",
    "encode (app/sse.py frames, app/faces)",
    "metrics / logs / limits (app/ops, logging)",
    "upstream client (httpx / httpx-aiohttp / aiohttp)",
    "other app code",
    "event loop: uvloop C (leaf asyncio.Runner.run), stdlib-only stacks",
)
(
    SERVER,
    ASGI,
    MIDDLEWARE,
    PARSE,
    HANDLERS,
    RELAY,
    SSE_DECODE,
    TRANSLATE,
    AUDIT,
    ENCODE,
    OPS,
    UPSTREAM,
    OTHER_APP,
    LOOP,
) = LAYERS

# (path fragment, layer): the first fragment found in a frame's file decides; order matters
# (more specific first). A frame matching none is transparent.
PATH_LAYERS: tuple[tuple[str, str], ...] = (
    ("/app/api/middleware.py", MIDDLEWARE),
    ("/app/api/metrics.py", OPS),
    ("/app/api/accounting.py", OPS),
    ("/app/api/auth.py", OPS),
    ("/app/toolcalls/metrics.py", OPS),
    ("/app/ops/", OPS),
    ("/app/relay/upstream.py", UPSTREAM),
    ("/app/relay/", RELAY),
    ("/app/translators/", TRANSLATE),
    ("/app/toolcalls/", AUDIT),
    ("/app/faces/", ENCODE),
    ("/app/sse.py", ENCODE),  # SSEDecoder's lines are told apart below
    ("/app/openai_types.py", PARSE),
    ("/app/json_depth.py", PARSE),
    ("/app/api/", HANDLERS),
    ("/app/routing/", HANDLERS),
    ("/app/request_record.py", HANDLERS),
    ("/app/", OTHER_APP),
    ("/uvicorn/", SERVER),
    ("/httptools/", SERVER),
    ("/uvloop/", SERVER),
    ("/granian/", SERVER),
    ("/starlette/", ASGI),
    ("/fastapi/", ASGI),
    ("/httpx_aiohttp/", UPSTREAM),
    ("/httpx/", UPSTREAM),
    ("/httpcore/", UPSTREAM),
    ("/aiohttp/", UPSTREAM),
    ("/yarl/", UPSTREAM),
    ("/multidict/", UPSTREAM),
    ("/aiohappyeyeballs/", UPSTREAM),
    ("/logging/", OPS),
    ("/prometheus_client/", OPS),
    ("/opentelemetry/", OPS),
)


def _decoder_lines() -> tuple[str, int, int]:
    """app/sse.py's SSEDecoder: its file and line span (decode is told from encode by line)."""
    from app import sse  # noqa: PLC0415  (the app's import is only needed here)

    lines, first = inspect.getsourcelines(sse.SSEDecoder)
    return str(Path(inspect.getfile(sse)).resolve()), first, first + len(lines) - 1


@dataclass
class Classifier:
    decoder: tuple[str, int, int] = field(default_factory=_decoder_lines)
    cache: dict[str, str | None] = field(default_factory=dict)

    def frame_layer(self, frame: str) -> str | None:
        """`function (path:line)` -> its layer, or None when transparent."""
        if frame in self.cache:
            return self.cache[frame]
        layer = None
        open_at = frame.rfind(" (")
        location = frame[open_at + 2 : -1] if open_at >= 0 and frame.endswith(")") else ""
        path, _, line = location.rpartition(":")
        path = path or location
        for fragment, candidate in PATH_LAYERS:
            if fragment in path:
                layer = candidate
                break
        if layer == ENCODE and path.endswith("/app/sse.py") and line.isdigit():
            _, first, last = self.decoder
            if first <= int(line) <= last:
                layer = SSE_DECODE
        self.cache[frame] = layer
        return layer

    def stack_layer(self, frames: list[str]) -> str:
        if "/asyncio/runners.py:" in frames[-1]:
            return LOOP  # uvloop's own C code (socket reads, timers) under asyncio.Runner.run
        for frame in reversed(frames):  # innermost first
            layer = self.frame_layer(frame)
            if layer is not None:
                return layer
        return LOOP


@dataclass
class Profile:
    """One scenario's samples and the CPU the proxy spent meanwhile."""

    scenario: Scenario
    result: LoadResult
    layers: Counter[str]
    functions: Counter[str]
    samples: int

    def us_per_request(self, layer: str) -> float:
        if not self.samples or not self.result.completed or self.result.cpu is None:
            return 0.0
        return self.result.cpu / self.result.completed * 1e6 * self.layers[layer] / self.samples

    @property
    def cpu_us(self) -> float:
        return (self.result.per_request(self.result.cpu) or 0.0) * 1e6


def parse_raw(text: str, classifier: Classifier) -> tuple[Counter[str], Counter[str], int]:
    """py-spy's raw (collapsed) output: `frame;frame;...;leaf COUNT` per line, root first."""
    layers: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack.strip():
            continue
        n = int(count)
        frames = stack.split(";")
        if frames[0].startswith("process "):  # --subprocesses names the process first
            frames = frames[1:] or ["(no Python frame: uvloop's C loop, GC)"]
        layers[classifier.stack_layer(frames)] += n
        functions[_short(frames[-1])] += n
        total += n
    return layers, functions, total


def _short(frame: str) -> str:
    """`fn (/long/path/site-packages/pkg/mod.py:12)` -> `fn (pkg/mod.py:12)`."""
    for marker in ("site-packages/", "/work/main/", str(peers.REPO) + "/", "/lib/python3."):
        at = frame.find(marker)
        if at >= 0:
            return frame[: frame.rfind(" (") + 2] + frame[at + len(marker) :]
    return frame


# --- running -----------------------------------------------------------------------------------


def start_proxy(args: argparse.Namespace, run_dir: Path) -> tuple[Server, Target]:
    port = args.port
    if args.server == "uvicorn":
        return peers.start_toolrelay(port, args.mock_port, run_dir)
    config = run_dir / "toolrelay.yaml"
    config.write_text(peers.toolrelay_config(args.mock_port))
    command = [args.granian, "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--workers", "1", "--loop", "uvloop", "--http", "1", "--no-ws"]
    command += ["app.main:app"]
    server = servers.start(
        command,
        log=run_dir / "toolrelay-granian.log",
        ready=(port, "/health"),
        env={"TOOLRELAY_CONFIG": str(config)} | peers.AWS_ENVIRONMENT,  # the SigV4 provider's
        cwd=peers.REPO,
    )
    target = Target(
        "toolrelay-granian",
        f"http://127.0.0.1:{port}",
        pid=server.pid,
        messages_api=True,
        responses_api=True,
        embeddings_api=True,
    )
    return server, target


async def profile_scenario(
    scenario: Scenario, target: Target, args: argparse.Namespace, run_dir: Path, mock_pid: int
) -> Profile:
    url, body, headers, check = target.request(scenario)
    spec = LoadSpec(
        url=url,
        body=body,
        check=check,
        upstream=scenario.upstream,
        concurrency=scenario.concurrency,
        duration=args.warmup,
        headers=headers,
    )
    await run_load(spec)
    raw = run_dir / (scenario.name.replace(" ", "_").replace("=", "") + ".txt")
    # --subprocesses: Granian serves from a worker process; uvicorn's one process is the pid.
    command = [args.py_spy, "record", "--pid", str(target.pid), "--rate", str(args.rate)]
    command += ["--format", "raw", "--full-filenames", "--nonblocking", "--subprocesses"]
    command += ["--duration", str(round(args.duration)), "-o", str(raw)]
    spy = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    await asyncio.sleep(0.3)  # py-spy attaches
    measured = replace(spec, duration=args.duration, pid=target.pid, upstream_pid=mock_pid)
    result = await run_load(measured)
    _, err = await asyncio.to_thread(spy.communicate)
    if spy.returncode != 0 or not raw.exists():
        raise SystemExit(f"py-spy failed ({spy.returncode}): {err.decode()[-800:]}")
    layers, functions, total = parse_raw(raw.read_text(), Classifier())
    errors = sum(result.errors.values())
    if errors:
        print(f"  {scenario.name}: {errors} wrong answers", file=sys.stderr)  # noqa: T201
    return Profile(scenario, result, layers, functions, total)


def chosen(names: list[str]) -> list[Scenario]:
    by_name = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"bench.profile: unknown scenario(s): {unknown}; see bench/scenarios.py")
    picked: list[Scenario] = []
    for name in names:
        scenario = by_name[name]
        for s in (scenario, by_name.get(scenario.base or "")):
            if s is not None and s not in picked:
                picked.append(s)
    return picked


async def run(args: argparse.Namespace) -> tuple[dict[str, Profile], str]:
    run_dir = SCRATCH / f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-{args.server}"
    run_dir.mkdir(parents=True, exist_ok=True)
    for port in (args.mock_port, args.port):
        if not servers.port_is_free(port):
            raise SystemExit(f"bench.profile: port {port} on 127.0.0.1 is taken")
    started: list[Server] = []
    profiles: dict[str, Profile] = {}
    try:
        mock = peers.start_mock(args.mock_port, run_dir, args)
        started.append(mock)
        server, target = start_proxy(args, run_dir)
        started.append(server)
        for scenario in chosen(args.scenario or list(DEFAULT_SCENARIOS)):
            print(f"profiling {scenario.name} ...", file=sys.stderr, flush=True)  # noqa: T201
            profiles[scenario.name] = await profile_scenario(
                scenario, target, args, run_dir, mock.pid
            )
    finally:
        for server in reversed(started):
            server.stop()
    return profiles, str(run_dir)


# --- the table ---------------------------------------------------------------------------------


def columns(profiles: dict[str, Profile], args: argparse.Namespace) -> list[tuple[str, dict]]:
    """(heading, {layer: µs, "total": µs, "samples": n}) per non-stream scenario and per
    chunk of each stream scenario that has its short base."""
    out: list[tuple[str, dict]] = []
    for name, profile in profiles.items():
        scenario = profile.scenario
        if not scenario.stream:
            values = {layer: profile.us_per_request(layer) for layer in LAYERS}
            values["total"] = profile.cpu_us
            values["samples"] = profile.samples
            out.append((f"{name}: µs/request", values))
            continue
        base = profiles.get(scenario.base or "")
        if base is None:
            continue
        long_events = stream_events(scenario.upstream, args.arg_chunks)
        short_events = stream_events(scenario.upstream, base.scenario.chunks or 0)
        span = long_events - short_events
        values = {
            layer: (profile.us_per_request(layer) - base.us_per_request(layer)) / span
            for layer in LAYERS
        }
        values["total"] = (profile.cpu_us - base.cpu_us) / span
        values["samples"] = profile.samples + base.samples
        out.append((f"{name}: µs/chunk", values))
        per_stream = {layer: profile.us_per_request(layer) for layer in LAYERS}
        per_stream["total"] = profile.cpu_us
        per_stream["samples"] = profile.samples
        out.append((f"{name}: µs/stream ({long_events} events)", per_stream))
    return out


def table(profiles: dict[str, Profile], args: argparse.Namespace) -> str:
    cols = columns(profiles, args)
    head = "| layer | " + " | ".join(h for h, _ in cols) + " |"
    rule = "| --- |" + " ---: |" * len(cols)
    rows = [head, rule]
    for layer in LAYERS:
        cells = []
        for _, values in cols:
            total = values["total"] or 1.0
            cells.append(f"{values[layer]:.1f} ({100 * values[layer] / total:.0f} %)")
        rows.append(f"| {layer} | " + " | ".join(cells) + " |")
    rows.append("| **total (/proc)** | " + " | ".join(f"**{v['total']:.1f}**" for _, v in cols))
    rows[-1] += " |"
    rows.append("| samples | " + " | ".join(str(v["samples"]) for _, v in cols) + " |")
    return "\n".join(rows)


def hottest(profiles: dict[str, Profile], top: int) -> str:
    parts = []
    for name, profile in profiles.items():
        parts.append(f"\n{name}: hottest leaf functions (share of samples)")
        for function, n in profile.functions.most_common(top):
            parts.append(f"  {100 * n / max(profile.samples, 1):5.1f} %  {function}")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.profile", description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", action="append", help="exact scenario name, repeatable")
    parser.add_argument("--server", choices=["uvicorn", "granian"], default="uvicorn")
    parser.add_argument("--granian", default=shutil.which("granian") or "granian")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or _beside("py-spy"))
    parser.add_argument("--duration", type=float, default=10.0, help="seconds sampled per cell")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rate", type=int, default=400, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=0, help="also list the N hottest functions")
    parser.add_argument("--mock-port", type=int, default=18200)
    parser.add_argument("--port", type=int, default=18201)
    parser.add_argument("--arg-chunks", type=int, default=50)
    parser.add_argument("--chunk-delay-ms", type=float, default=1.0)
    parser.add_argument("--first-byte-delay-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    started = time.monotonic()
    profiles, run_dir = uvloop.run(run(args))
    print(  # noqa: T201
        f"ToolRelay under {args.server}, py-spy at {args.rate} Hz, {args.duration:g} s per "
        f"scenario ({time.monotonic() - started:.0f} s in all; raw stacks in {run_dir})\n"
    )
    for profile in profiles.values():
        r = profile.result
        print(  # noqa: T201
            f"{profile.scenario.name}: {r.completed} answers, {r.rps:.0f}/s, "
            f"errors {sum(r.errors.values())}, CPU {profile.cpu_us:.0f} µs/request, "
            f"{profile.samples} samples"
        )
    print("\n" + table(profiles, args))  # noqa: T201
    if args.top:
        print(hottest(profiles, args.top))  # noqa: T201


def _beside(name: str) -> str:
    """A console script installed next to this interpreter (the .venv's bin/)."""
    return str(Path(sys.executable).parent / name)


if __name__ == "__main__":
    main()
