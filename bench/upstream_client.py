"""The upstream client's own cost, in-process (issue 23): `python -m bench.upstream_client`.

Reads the bench mock's paced OpenAI streams (57 and 17 SSE events, one write per event, 1 ms
apart) with N concurrent connections, each client taking turns in one run:

- `httpx + httpx-aiohttp`: what ToolRelay does (`httpx.AsyncClient` over `AiohttpTransport`,
  `send(stream=True)`, `aiter_bytes()`, `aclose()`);
- `aiohttp`: the same requests with aiohttp's own `ClientSession`, `content.iter_any()`.

CPU is this process's (`time.process_time`; the mock runs in its own process): per stream, and
per chunk as (CPU per 57-event stream - per 17-event stream) / 40, the bench's definition. It
also counts the reads each client returns per stream against the events in it (how often one
read holds several events), optionally with a busy loop of `--burn-us` per event read to
stand in for the proxy's own per-chunk work, which lets events pile up between reads.

    python -m bench.upstream_client                     # c=8 and c=32, 3 rounds of 4 s
    python -m bench.upstream_client -c 32 --burn-us 25  # reads per stream on a busy loop
    python -m bench.upstream_client -c 32 --non-stream  # CPU per non-stream request instead
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import httpx
import uvloop
from httpx_aiohttp import AiohttpTransport

from bench import peers
from bench.payload import openai_request
from bench.scenarios import stream_events

SHORT = 10
HEADERS = {"content-type": "application/json", "authorization": "Bearer bench"}


@dataclass
class Tally:
    streams: int = 0
    reads: int = 0
    events: int = 0
    cpu: float = 0.0
    wrong: int = 0
    reads_per_stream: list[int] = field(default_factory=list)


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


Reader = Callable[[bytes, Tally, float], Awaitable[None]]


def httpx_reader(url: str, concurrency: int) -> tuple[Reader, Callable[[], Awaitable[None]]]:
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=60)
    client = httpx.AsyncClient(transport=AiohttpTransport(limits=limits), timeout=30)

    async def read(body: bytes, tally: Tally, burn: float) -> None:
        request = client.build_request("POST", url, content=body, headers=HEADERS)
        response = await client.send(request, stream=True)
        if b'"stream":false' in body:
            await response.aread()
            await response.aclose()
            _count(tally, 1, 0)
            return
        reads = events = 0
        try:
            async for data in response.aiter_bytes():
                reads += 1
                n = data.count(b"\n\n")
                events += n
                if burn:
                    _burn(burn * n)
        finally:
            await response.aclose()
        _count(tally, reads, events)

    return read, client.aclose


def aiohttp_reader(url: str, concurrency: int) -> tuple[Reader, Callable[[], Awaitable[None]]]:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1000, keepalive_timeout=60),
        timeout=aiohttp.ClientTimeout(total=30),
        auto_decompress=False,
    )

    async def read(body: bytes, tally: Tally, burn: float) -> None:
        async with session.post(url, data=body, headers=HEADERS) as response:
            if b'"stream":false' in body:
                await response.read()
                _count(tally, 1, 0)
                return
            reads = events = 0
            async for data in response.content.iter_any():
                reads += 1
                n = data.count(b"\n\n")
                events += n
                if burn:
                    _burn(burn * n)
        _count(tally, reads, events)

    return read, session.close


def _count(tally: Tally, reads: int, events: int) -> None:
    tally.streams += 1
    tally.reads += reads
    tally.events += events
    tally.reads_per_stream.append(reads)


CLIENTS = {"httpx + httpx-aiohttp": httpx_reader, "aiohttp": aiohttp_reader}


async def load(read: Reader, body: bytes, concurrency: int, seconds: float, burn: float) -> Tally:
    tally = Tally()
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            await read(body, tally, burn)

    cpu0 = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    tally.cpu = time.process_time() - cpu0
    return tally


async def measure(args: argparse.Namespace) -> None:
    url = f"http://127.0.0.1:{args.mock_port}/v1/chat/completions"
    long_body = openai_request("mock-model", stream=True)
    short_body = openai_request(f"mock-model-n{SHORT}", stream=True)
    long_events = stream_events("openai", args.arg_chunks)
    short_events = stream_events("openai", SHORT)
    readers = {name: make(url, args.concurrency) for name, make in CLIENTS.items()}
    per_chunk: dict[str, list[float]] = {name: [] for name in readers}
    per_stream: dict[str, list[float]] = {name: [] for name in readers}
    reads: dict[str, list[float]] = {name: [] for name in readers}
    if args.non_stream:
        await non_stream(readers, url, args)
        for _, close in readers.values():
            await close()
        return
    try:
        for read, _ in readers.values():  # warm-up: connections, caches
            await load(read, short_body, args.concurrency, 0.5, 0.0)
        for round_ in range(args.rounds):
            order = list(readers.items())
            if round_ % 2:
                order.reverse()
            for name, (read, _) in order:
                long = await load(
                    read, long_body, args.concurrency, args.duration, args.burn_us / 1e6
                )
                short = await load(read, short_body, args.concurrency, args.duration, 0.0)
                cpu_long = long.cpu / long.streams - args.burn_us / 1e6 * long_events
                cpu_short = short.cpu / short.streams
                per_chunk[name].append((cpu_long - cpu_short) / (long_events - short_events) * 1e6)
                per_stream[name].append(cpu_long * 1e3)
                reads[name].append(long.reads / long.streams)
                print(  # noqa: T201
                    f"round {round_ + 1} {name:<22} {long.streams:5d} long / {short.streams:5d} "
                    f"short streams; {per_chunk[name][-1]:6.1f} µs/chunk, "
                    f"{per_stream[name][-1]:.2f} ms per {long_events}-event stream; "
                    f"{long.reads / long.streams:.1f} reads for {long.events / long.streams:.1f} "
                    f"events per stream (max {max(long.reads_per_stream)} min "
                    f"{min(long.reads_per_stream)})",
                    flush=True,
                )
    finally:
        for _, close in readers.values():
            await close()
    print(  # noqa: T201
        f"\nc={args.concurrency}, burn {args.burn_us:g} µs/event, {args.rounds} rounds of "
        f"{args.duration:g} s; medians:"
    )
    for name in readers:
        print(  # noqa: T201
            f"  {name:<22} {statistics.median(per_chunk[name]):6.1f} µs/chunk "
            f"(rounds: {', '.join(f'{v:.1f}' for v in per_chunk[name])}), "
            f"{statistics.median(per_stream[name]):.2f} ms per {long_events}-event stream, "
            f"{statistics.median(reads[name]):.1f} reads per {long_events} events"
        )


async def non_stream(readers: dict, url: str, args: argparse.Namespace) -> None:
    """CPU per non-stream request (the mock's whole answer read), each client in turn."""
    body = openai_request("mock-model", stream=False)
    assert b'"stream":false' in body
    cpu: dict[str, list[float]] = {name: [] for name in readers}
    for read, _ in readers.values():
        await load(read, body, args.concurrency, 0.5, 0.0)
    for round_ in range(args.rounds):
        order = list(readers.items())
        if round_ % 2:
            order.reverse()
        for name, (read, _) in order:
            tally = await load(read, body, args.concurrency, args.duration, 0.0)
            cpu[name].append(tally.cpu / tally.streams * 1e6)
            print(  # noqa: T201
                f"round {round_ + 1} {name:<22} {tally.streams:6d} requests, "
                f"{cpu[name][-1]:6.0f} µs CPU per non-stream request",
                flush=True,
            )
    print(f"\nnon-stream c={args.concurrency}, {args.rounds} rounds; medians:")  # noqa: T201
    for name, values in cpu.items():
        rounds = ", ".join(f"{v:.0f}" for v in values)
        print(f"  {name:<22} {statistics.median(values):6.0f} µs/request ({rounds})")  # noqa: T201


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.upstream_client", description=__doc__)
    parser.add_argument("-c", "--concurrency", type=int, default=8)
    parser.add_argument("-d", "--duration", type=float, default=4.0, help="seconds per cell")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--non-stream", action="store_true", help="CPU per non-stream request")
    parser.add_argument("--burn-us", type=float, default=0.0, help="busy µs per event read")
    parser.add_argument("--mock-port", type=int, default=18300)
    parser.add_argument("--arg-chunks", type=int, default=50)
    parser.add_argument("--chunk-delay-ms", type=float, default=1.0)
    parser.add_argument("--first-byte-delay-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    run_dir = peers.SCRATCH / "upstream_client"
    run_dir.mkdir(parents=True, exist_ok=True)
    mock = peers.start_mock(args.mock_port, run_dir, args)
    try:
        uvloop.run(measure(args))
    finally:
        mock.stop()


if __name__ == "__main__":
    main()
