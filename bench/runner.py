"""`bench/run`: start the mock (and the peers asked for), run every scenario against every
target, interleaved, and print one table.

    bench/run                        # the mock directly, and ToolRelay from this repo
    bench/run --with-peers           # ... and LiteLLM, Portkey, nginx side by side
    bench/run NAME=http://127.0.0.1:PORT[@PID][+messages][+responses][+bedrock] ...   # any
        # other OpenAI-compatible target, configured to map the models bench-openai /
        # bench-anthropic to the mock (http://127.0.0.1:MOCK_PORT/v1 for an openai kind, .../ for
        # an anthropic kind); +messages / +responses: it also serves /v1/messages / /v1/responses;
        # +bedrock: it has bench-bedrock(-sigv4)(-n10) on a bedrock kind at .../ (see peers.py)
    bench/run --scenario bedrock --rounds 4   # issue 30: a Bedrock upstream beside an anthropic
        # one, the same answer streamed both ways, CPU per chunk side by side (and SigV4's cost)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import orjson
import uvloop

from bench import peers, procstat
from bench.load import LoadSpec, run_load
from bench.report import Cell, Table, as_json
from bench.scenarios import SCENARIOS, SHORT_STREAM_CHUNKS, Scenario, Target, stream_events
from bench.servers import Server, port_is_free

ALL_PEERS = ("toolrelay", "toolrelay-recover", "litellm", "portkey", "nginx")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run",
        description=__doc__.split("\n")[0],
        epilog="scenarios: " + "; ".join(s.name for s in SCENARIOS),
    )
    parser.add_argument(
        "targets",
        nargs="*",
        help="extra targets: NAME=http://127.0.0.1:PORT[@PID][+messages][+responses][+bedrock]",
    )
    parser.add_argument("--with-peers", action="store_true", help="also LiteLLM, Portkey, nginx")
    parser.add_argument("--peers", help=f"comma-separated subset of {','.join(ALL_PEERS)}")
    parser.add_argument(
        "--toolrelay-workers",
        type=_worker_counts,
        default=[1],
        help="uvicorn workers; a list (1,2) runs one ToolRelay per count, side by side",
    )
    parser.add_argument("--duration", type=float, default=8.0, help="seconds measured per cell")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before each cell")
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="per cell")
    parser.add_argument(
        "--scenario",
        action="append",
        help="only scenarios containing this (=NAME: that one only); repeatable. 'bedrock': "
        "issue 30's Bedrock-against-anthropic streams (and SigV4 against an API key)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every cell this many times, pooled (a busy machine's moments even out)",
    )
    parser.add_argument("--mock-port", type=int, default=18100)
    parser.add_argument("--base-port", type=int, default=18101, help="first port for the peers")
    parser.add_argument("--arg-chunks", type=int, default=50, help="argument deltas per stream")
    parser.add_argument("--chunk-delay-ms", type=float, default=1.0)
    parser.add_argument("--first-byte-delay-ms", type=float, default=0.0)
    parser.add_argument("--no-install", action="store_true", help="do not run install_peers.sh")
    return parser.parse_args(argv)


def _worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"worker counts are positive integers: {text!r}")
    return counts


def chosen_peers(args: argparse.Namespace) -> list[str]:
    if args.peers is not None:
        names = [p for p in args.peers.split(",") if p]
    else:
        names = list(ALL_PEERS) if args.with_peers else ["toolrelay"]
    unknown = set(names) - set(ALL_PEERS)
    if unknown:
        raise SystemExit(f"bench/run: unknown peer(s): {', '.join(sorted(unknown))}")
    return names


EXTERNAL_FACES = ("messages", "responses", "bedrock")


def external_target(spec: str) -> Target:
    """NAME=URL[@PID][+messages][+responses][+bedrock]: the faces it serves besides chat
    completions (/v1/messages, /v1/responses) and whether it has the Bedrock models; without
    them its cells of those scenarios are n/a."""
    name, _, rest = spec.partition("=")
    address, *faces = rest.split("+")
    url, _, pid = address.partition("@")
    if not name or not url or set(faces) - set(EXTERNAL_FACES):
        raise SystemExit(
            f"bench/run: a target is NAME=URL[@PID][+messages][+responses][+bedrock], not {spec!r}"
        )
    return Target(
        name,
        url.rstrip("/").removesuffix("/v1"),
        pid=int(pid) if pid else None,
        messages_api="messages" in faces,
        responses_api="responses" in faces,
        bedrock="bedrock" in faces,
    )


def chosen_scenarios(args: argparse.Namespace) -> list[Scenario]:
    if not args.scenario:
        return list(SCENARIOS)
    names = {s.name for s in SCENARIOS if any(_matches(part, s.name) for part in args.scenario)}
    # a stream's CPU per chunk needs its base scenario; a comparison its `versus` one (and
    # that one's base: a Bedrock stream is compared per chunk with an anthropic stream)
    while True:
        needed = {n for s in SCENARIOS if s.name in names for n in (s.base, s.versus) if n}
        if needed <= names:
            return [s for s in SCENARIOS if s.name in names]
        names |= needed


def _matches(part: str, name: str) -> bool:
    """`=NAME` is that scenario only; any other text, every scenario whose name holds it."""
    return name == part[1:] if part.startswith("=") else part in name


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # noqa: T201


async def measure(
    targets: list[Target], scenarios: list[Scenario], args: argparse.Namespace, mock_pid: int
) -> list[Cell]:
    """Every scenario against every target; within a scenario the targets take turns, in an
    order rotated from one scenario to the next, so machine noise hits all alike."""
    cells: list[Cell] = []
    total = sum(1 for s in scenarios for t in targets if t.serves(s))
    done = 0
    for i, scenario in enumerate(scenarios):
        shift = i % len(targets)
        for target in targets[shift:] + targets[:shift]:
            if not target.serves(scenario):
                cells.append(Cell(scenario, target, None))
                continue
            url, body, headers, check = target.request(scenario)
            spec = LoadSpec(
                url=url,
                body=body,
                check=check,
                upstream=scenario.upstream,
                concurrency=scenario.concurrency,
                duration=args.warmup,
                max_requests=args.max_requests,
                headers=headers,
            )
            await run_load(spec)
            measured = replace(spec, duration=args.duration, pid=target.pid, upstream_pid=mock_pid)
            result = await run_load(measured)
            cells.append(Cell(scenario, target, result))
            done += 1
            errors = sum(result.errors.values())
            _progress(
                f"[{done}/{total}] {scenario.name:<26} {target.name:<12} "
                f"{result.rps:8.0f} RPS  errors {errors}/{result.completed}"
            )
            await asyncio.sleep(0.3)
    order = {t.name: n for n, t in enumerate(targets)}
    rank = {s.name: n for n, s in enumerate(scenarios)}
    return sorted(cells, key=lambda c: (rank[c.scenario.name], order[c.target.name]))


def pooled(first: Cell, second: Cell) -> Cell:
    if first.result is None or second.result is None:
        return first
    return Cell(first.scenario, first.target, first.result.pooled(second.result))


def start_targets(
    names: list[str],
    args: argparse.Namespace,
    run_dir: Path,
    started: list[Server],
    clouds: bool = True,
) -> list[Target]:
    """`clouds`: ToolRelay with its Bedrock providers (only when a Bedrock scenario runs, so
    its peak RSS is that of a config without a cloud kind otherwise, issue 40)."""
    launches = [
        (name, workers)
        for name in names
        for workers in (args.toolrelay_workers if name == "toolrelay" else [1])
    ]
    for offset in range(len(launches) + 1):
        port = args.mock_port if offset == 0 else args.base_port + offset - 1
        if not port_is_free(port):
            raise SystemExit(f"bench/run: port {port} on 127.0.0.1 is taken")
    mock = peers.start_mock(args.mock_port, run_dir, args)
    started.append(mock)
    targets = [Target("direct", f"http://127.0.0.1:{args.mock_port}", pid=mock.pid, direct=True)]
    for offset, (name, workers) in enumerate(launches):
        port = args.base_port + offset
        _progress(f"starting {name} ({workers} worker(s)) on 127.0.0.1:{port}")
        if name == "toolrelay":
            server, target = peers.start_toolrelay(
                port, args.mock_port, run_dir, workers=workers, clouds=clouds
            )
        else:
            server, target = peers.PEERS[name](port, args.mock_port, run_dir)
        started.append(server)
        targets.append(target)
    return targets + [external_target(spec) for spec in args.targets]


def render(table: Table, args: argparse.Namespace, versions: dict[str, str]) -> str:
    events = ", ".join(f"{name}: {n}" for name, n in table.events.items())
    settings = (
        f"{args.duration:g} s measured per cell after {args.warmup:g} s of warm-up"
        f"{f', {args.rounds} rounds pooled' if args.rounds > 1 else ''}; "
        f"streams: {args.arg_chunks} argument deltas ({SHORT_STREAM_CHUNKS} in the short ones), "
        f"{args.chunk_delay_ms:g} ms between events "
        f"(events per stream: {events}); mock first-byte delay {args.first_byte_delay_ms:g} ms"
    )
    parts = [
        f"# ToolRelay benchmark, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        settings,
        "## Results",
        table.markdown(),
        "## ToolRelay against Portkey (issue 23's budgets)",
        table.against(),
        "## Side by side (issue 21's embeddings, issue 30's Bedrock)",
        table.side_by_side(),
        "## Correctness (every answer checked)",
        table.errors(),
        "## The harness itself",
        table.harness(),
        "## Versions",
        "\n".join(f"- {name}: {version}" for name, version in versions.items()),
    ]
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    names = chosen_peers(args)
    scenarios = chosen_scenarios(args)
    run_dir = peers.SCRATCH / "runs" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True)
    to_install = [n for n in names if n != "toolrelay"]
    if to_install and not args.no_install:
        subprocess.run([str(peers.BENCH / "install_peers.sh"), *to_install], check=True)
    versions = peers.versions(names)
    started: list[Server] = []
    try:
        clouds = any(scenario.upstream == "bedrock" for scenario in scenarios)
        targets = start_targets(names, args, run_dir, started, clouds)
        time.sleep(1.0)
        for target in targets:
            if target.pid:
                target.idle_rss = procstat.rss_bytes(procstat.tree(target.pid))
        cells = uvloop.run(measure(targets, scenarios, args, started[0].pid))
        for _ in range(args.rounds - 1):
            again = uvloop.run(measure(targets, scenarios, args, started[0].pid))
            cells = [pooled(first, second) for first, second in zip(cells, again, strict=True)]
    finally:
        for server in reversed(started):
            server.stop()
    events = {
        s.name: stream_events(s.upstream, s.chunks or args.arg_chunks)
        for s in scenarios
        if s.stream
    }
    table = Table(cells, events)
    text = render(table, args, versions)
    (run_dir / "results.md").write_text(text)
    meta = {"settings": vars(args), "versions": versions, "events_per_stream": events}
    (run_dir / "results.json").write_bytes(
        orjson.dumps(as_json(table, meta), option=orjson.OPT_INDENT_2)
    )
    print(text)  # noqa: T201
    _progress(f"written to {run_dir}/results.md and results.json")


if __name__ == "__main__":
    main()
