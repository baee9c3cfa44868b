"""Load generator: a fixed number of keep-alive connections, each sending the same request back to
back for a bounded time (and at most a bounded count), every answer checked for correctness.

Reports RPS, latency percentiles, time to first body byte, errors (wrong answers included) and,
given the proxy's PID, the CPU seconds its process tree spent per request (utime + stime from
/proc, independent of how fast this client is) and its RSS sampled during the run.

    python -m bench.load --url http://127.0.0.1:18101 --model bench-openai -c 32 -d 5 --pid PID
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field
from time import perf_counter

import uvloop

from bench import procstat
from bench.check import CheckFn, checker
from bench.http_client import Connection, Reply, build_request, loopback_address
from bench.payload import Client, Format, embeddings_base64_request
from bench.scenarios import CLIENT_PATHS, CLIENT_REQUESTS

RSS_SAMPLE_EVERY = 0.05  # seconds


@dataclass(frozen=True, slots=True)
class LoadSpec:
    url: str  # full URL of the endpoint
    body: bytes
    check: CheckFn
    upstream: Format  # the format of the upstream behind the target (what answer to expect)
    concurrency: int
    duration: float  # seconds; no new request starts after this
    max_requests: int = 1_000_000
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    pid: int | None = None  # the proxy's main process: CPU and RSS of its tree
    upstream_pid: int | None = None  # the mock's, to show it is not the bottleneck


@dataclass(slots=True)
class LoadResult:
    elapsed: float = 0.0
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    ttfbs: list[float] = field(default_factory=list)
    cpu: float | None = None  # proxy tree CPU seconds during the run
    upstream_cpu: float | None = None
    client_cpu: float = 0.0  # this process's CPU seconds during the run
    rss_start: int | None = None  # bytes
    rss_peak: int | None = None

    @property
    def completed(self) -> int:
        return self.ok + sum(self.errors.values())

    @property
    def rps(self) -> float:
        return self.ok / self.elapsed if self.elapsed else 0.0

    @property
    def cores(self) -> float | None:
        """The target's CPU over the run's wall time: ~1 or more is a saturated target."""
        return self.cpu / self.elapsed if self.cpu is not None and self.elapsed else None

    def per_request(self, seconds: float | None) -> float | None:
        return seconds / self.completed if seconds is not None and self.completed else None

    def pooled(self, other: LoadResult) -> LoadResult:
        """Both runs as one: counts, times and CPU added, latencies together, the higher
        peak (how `--rounds` averages out a busy machine's moments)."""

        def both(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a + b

        peaks = [peak for peak in (self.rss_peak, other.rss_peak) if peak is not None]
        return LoadResult(
            elapsed=self.elapsed + other.elapsed,
            ok=self.ok + other.ok,
            errors=self.errors + other.errors,
            latencies=self.latencies + other.latencies,
            ttfbs=self.ttfbs + other.ttfbs,
            cpu=both(self.cpu, other.cpu),
            upstream_cpu=both(self.upstream_cpu, other.upstream_cpu),
            client_cpu=self.client_cpu + other.client_cpu,
            rss_start=self.rss_start,
            rss_peak=max(peaks) if peaks else None,
        )

    def percentile(self, p: float, values: list[float] | None = None) -> float | None:
        """Nearest-rank percentile, seconds."""
        data = sorted(self.latencies if values is None else values)
        if not data:
            return None
        return data[min(len(data) - 1, max(0, round(p / 100 * len(data) + 0.5) - 1))]


async def run_load(spec: LoadSpec) -> LoadResult:
    result = LoadResult()
    pids = procstat.tree(spec.pid) if spec.pid else []
    upstream_pids = procstat.tree(spec.upstream_pid) if spec.upstream_pid else []
    sampler = asyncio.create_task(_sample_rss(spec.pid, result)) if spec.pid else None
    cpu0, upstream0, client0 = _cpu(pids), _cpu(upstream_pids), _own_cpu()
    started = perf_counter()
    run = _Run(spec, result, deadline=started + spec.duration)
    await asyncio.gather(*(run.worker() for _ in range(spec.concurrency)))
    result.elapsed = perf_counter() - started
    result.client_cpu = _own_cpu() - client0
    if spec.pid:
        result.cpu = _cpu(procstat.tree(spec.pid)) - cpu0
    if upstream_pids:
        result.upstream_cpu = _cpu(upstream_pids) - upstream0
    if sampler is not None:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
    return result


class _Run:
    """What the workers of one run share: the request, the deadline, the budget, the tally."""

    def __init__(self, spec: LoadSpec, result: LoadResult, deadline: float) -> None:
        self.spec = spec
        self.result = result
        self.deadline = deadline
        self.budget = spec.max_requests
        self.host, self.port = loopback_address(spec.url)
        self.raw = build_request(spec.url, spec.body, spec.headers)

    async def worker(self) -> None:
        connection: Connection | None = None
        while perf_counter() < self.deadline and self.budget > 0:
            self.budget -= 1
            try:
                if connection is None or connection.closed:
                    connection = await Connection.open(self.host, self.port)
                reply = await connection.send(self.raw, self.spec.timeout)
            except (OSError, TimeoutError, ValueError) as exc:
                self.result.errors[f"{type(exc).__name__}: {exc}"[:200]] += 1
                connection = None
                await asyncio.sleep(0.01)  # a refused connection must not spin
                continue
            _record(reply, self.spec, self.result)
        if connection is not None:
            connection.close()


def _record(reply: Reply, spec: LoadSpec, result: LoadResult) -> None:
    if reply.status != 200:
        wrong: str | None = f"HTTP {reply.status}: {reply.body[:300]!r}"
    else:
        try:
            wrong = spec.check(reply.body, spec.upstream)
        except Exception as exc:  # a malformed answer that the check could not even walk
            wrong = f"malformed answer ({type(exc).__name__}: {exc})"
    if wrong:
        result.errors[wrong] += 1
        return
    result.ok += 1
    result.latencies.append(reply.latency)
    result.ttfbs.append(reply.ttfb)


async def _sample_rss(pid: int | None, result: LoadResult) -> None:
    assert pid is not None
    pids = procstat.tree(pid)
    result.rss_start = result.rss_peak = procstat.rss_bytes(pids)
    ticks = 0
    while True:
        await asyncio.sleep(RSS_SAMPLE_EVERY)
        ticks += 1
        if ticks % 20 == 0:  # workers may come and go
            pids = procstat.tree(pid)
        result.rss_peak = max(result.rss_peak or 0, procstat.rss_bytes(pids))


def _cpu(pids: list[int]) -> float:
    return procstat.cpu_seconds(pids) if pids else 0.0


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# --- command line ------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f} ms"


def summary(result: LoadResult, *, stream: bool) -> str:
    lines = [
        f"requests {result.completed} in {result.elapsed:.2f} s: {result.rps:.1f} ok/s, "
        f"errors {sum(result.errors.values())}",
        "latency p50 {} p90 {} p99 {}".format(*(_ms(result.percentile(p)) for p in (50, 90, 99))),
        f"client CPU {_ms(result.per_request(result.client_cpu))}/request",
    ]
    if stream:
        lines.append(f"ttfb p50 {_ms(result.percentile(50, result.ttfbs))}")
    if result.cpu is not None:
        lines.append(f"proxy CPU {_ms(result.per_request(result.cpu))}/request")
    if result.rss_peak is not None:
        lines.append(f"proxy RSS {(result.rss_start or 0) >> 20} -> {result.rss_peak >> 20} MiB")
    lines += [f"  {count} x {error}" for error, count in result.errors.most_common(5)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="load", description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="target base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument(
        "--client",
        choices=["openai", "anthropic", "responses", "embeddings"],
        default="openai",
        help="chat completions, Anthropic messages, OpenAI's Responses API or embeddings",
    )
    parser.add_argument(
        "--base64", action="store_true", help="embeddings: ask for base64 (the SDK's default)"
    )
    parser.add_argument("--upstream", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--model", default="bench-openai")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("-c", "--concurrency", type=int, default=32)
    parser.add_argument("-d", "--duration", type=float, default=5.0)
    parser.add_argument("-n", "--max-requests", type=int, default=1_000_000)
    parser.add_argument("--pid", type=int, help="the proxy's PID: CPU and RSS of its tree")
    parser.add_argument("--header", action="append", default=[], help="NAME:VALUE, repeatable")
    args = parser.parse_args(argv)
    client: Client = args.client
    upstream: Format = args.upstream
    base = args.url.rstrip("/").removesuffix("/v1")
    spec = LoadSpec(
        url=base + CLIENT_PATHS[client],
        body=(
            embeddings_base64_request(args.model)
            if client == "embeddings" and args.base64
            else CLIENT_REQUESTS[client](args.model, stream=args.stream)
        ),
        check=checker(client, stream=args.stream, packed=args.base64),
        upstream=upstream,
        concurrency=args.concurrency,
        duration=args.duration,
        max_requests=args.max_requests,
        headers=dict(h.split(":", 1) for h in args.header),
        pid=args.pid,
    )
    result = uvloop.run(run_load(spec))
    print(summary(result, stream=args.stream))  # noqa: T201


if __name__ == "__main__":
    main()
