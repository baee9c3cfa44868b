"""Issue 32's speed budget, measured side by side (bench/RESULTS.md, "Spend (issue 32)"):
"Pricing and a budget check cost <= 20 us CPU per request in memory and one Redis round trip
(reserve) plus one (settle) with Redis; a request with no budget and no price pays nothing
measurable."

    .venv/bin/python -m bench.spend                      # in-process, memory and Redis (~1 min)
    .venv/bin/python -m bench.spend --server --rounds 4  # ... and ToolRelay processes (~4 min)

(1) In-process, the spend work of one request exactly as dispatch, the attempt and accounting
    do it (reserve, the price looked up, the answer priced, its cost recorded, settle, the spend
    counter), on the state `build_state` makes from each config: `spend` (a priced model, the
    key's, its team's and the model's budget: three) against `none` (no price, no budget: what
    is left is the `is not None` checks) and `bare` (the same loop without those checks). The
    variants take turns, batch by batch; CPU is this thread's (`time.thread_time`).
(2) The same with `store: redis` on a private redis-server: the commands Redis served per
    request (INFO commandstats before and after) and the wall time of reserve and settle.
(3) `--server`: the bench's mock and three ToolRelay processes (`python -m app`) on configs
    that differ only in price and budgets (`none`, `priced`: prices only, `spend`: prices and
    the three budgets; each with one named key, sent by the load), loaded in turns with the
    bench's checked requests (non-stream c=32, stream c=8); CPU per request from /proc.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis
import uvloop
import yaml

from app.__main__ import tune_garbage_collector
from app.config import parse_config
from app.main import build_state
from app.openai_types import ChatRequest, parse_chat_request
from app.request_record import RequestRecord
from app.spend.cost import price_answer
from app.spend.guard import estimate_input
from app.spend.ledger import Reservation
from app.state import ProxyState
from bench import peers, servers
from bench.check import checker
from bench.load import LoadResult, LoadSpec, run_load
from bench.payload import openai_request
from tests.helpers.redis_server import RedisServer

KEY = "bench-spend-key"
MODEL = "bench-openai"
USAGE = {"prompt_tokens": 812, "completion_tokens": 154, "total_tokens": 966}
PRICE = {"input": 0.15, "output": 0.6, "cache_read": 0.075}
BIG = {"usd": 1e9, "period": "month"}
"""Budgets no request reaches: every reservation is admitted and settled."""


def spend_server(priced: bool, store: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `server` section: one named key; `priced`: with its budget, its team's, the
    models' (the prices go on the models, `with_prices`)."""
    key: dict[str, Any] = {"name": "bench", "key": KEY}
    server: dict[str, Any] = {"keys": [key]}
    if priced:
        key |= {"team": "bench-team", "budget": BIG}
        server["teams"] = {"bench-team": {"budget": BIG}}
    if store is not None:
        server["store"] = store
    return server


def with_prices(raw: dict[str, Any], priced: bool) -> dict[str, Any]:
    if priced:
        for model in raw["models"]:
            model["price"] = dict(PRICE)
        raw["server"]["budgets"] = {model["name"]: BIG for model in raw["models"]}
    return raw


def config_for(priced: bool, store: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(peers.toolrelay_config(18100))
    raw["server"] = spend_server(priced, store)
    return with_prices(raw, priced)


# -- (1) and (2): in-process -----------------------------------------------------------------


class Variant:
    """One state and the spend work of one request on it, as the proxy does it."""

    def __init__(self, name: str, proxy: ProxyState, request: ChatRequest) -> None:
        self.name, self.proxy, self.request = name, proxy, request
        self.key = proxy.ops.keys.identify(KEY.encode())
        self.route = proxy.router.resolve(request.model)
        self.target = self.route.deployments[0].target
        self.cpu: list[float] = []
        self.wall: list[float] = []

    async def one(self) -> None:
        proxy, record = self.proxy, self.record()
        if proxy.spend is not None:  # dispatch.answer
            await proxy.spend.reserve(record, self.request, self.route, proxy.spend_prices)
        price = proxy.spend_prices.for_target(self.target)  # attempt: a whole answer
        completion = {"usage": dict(USAGE)}
        if price is not None:
            record.add_cost(price_answer(price, completion, {}))
        if proxy.spend is not None:  # accounting.request_ended
            await proxy.spend.settle(record)
        if record.cost_usd is not None:
            metrics = proxy.ops.metrics
            metrics.count_spend(record.model or "", "mock_openai", self.key.name, record.cost_usd)

    async def bare(self) -> None:
        """`one` without a line of spend code: the record and the answer's usage only."""
        self.record()
        _ = {"usage": dict(USAGE)}

    def record(self) -> RequestRecord:
        record = RequestRecord("r", "POST", "/v1/chat/completions", key=self.key)
        record.model = self.route.model_name
        return record


async def batch(variant: Variant, work: Callable[[], Awaitable[None]], count: int) -> None:
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(count):
        await work()
    variant.cpu.append((time.thread_time() - cpu) / count)
    variant.wall.append((time.perf_counter() - wall) / count)


async def in_process(store: dict[str, Any] | None, batches: int, count: int) -> list[Variant]:
    request = parse_chat_request(openai_request(MODEL, stream=False))
    states = [build_state(parse_config(config_for(p, store), "bench", {})) for p in (True, False)]
    spend, none = (Variant(n, s, request) for n, s in zip(("spend", "none"), states, strict=True))
    bare = Variant("bare", states[1], request)
    try:
        for variant in (spend, none):
            await batch(variant, variant.one, count)  # warm-up (scripts loaded, caches filled)
        for variant in (spend, none, bare):
            variant.cpu.clear()
            variant.wall.clear()
        for _ in range(batches):
            await batch(spend, spend.one, count)
            await batch(none, none.one, count)
            await batch(bare, bare.bare, count)
    finally:
        for state in states:
            await state.aclose()
    return [spend, none, bare]


def commandstats(client: redis.Redis) -> dict[str, float]:
    """Calls per command, and `cpu`: Redis' own CPU seconds (user + system)."""
    stats = client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): float(value["calls"]) for name, value in stats.items()}
    cpu = client.info("cpu")
    return calls | {"cpu": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])}


async def redis_round_trips(url: str, count: int) -> dict[str, dict[str, float]]:
    """Commands Redis served per request, for each variant (its own run of `count`)."""
    client = redis.Redis.from_url(url)
    request = parse_chat_request(openai_request(MODEL, stream=False))
    answer: dict[str, dict[str, float]] = {}
    for priced in (True, False):
        config = config_for(priced, {"kind": "redis", "url": url, "prefix": f"bench{priced}:"})
        state = build_state(parse_config(config, "bench", {}))
        variant = Variant("spend" if priced else "none", state, request)
        try:
            await variant.one()  # EVALSHA's first NOSCRIPT and SCRIPT LOAD left out
            before = commandstats(client)
            for _ in range(count):
                await variant.one()
            after = commandstats(client)
        finally:
            await state.aclose()
        answer[variant.name] = {
            name: round((calls - before.get(name, 0)) / count * (1e6 if name == "cpu" else 1), 2)
            for name, calls in after.items()
            if calls != before.get(name, 0) and name != "info"
        }
    return answer


async def parts(count: int) -> None:
    """Where `spend`'s time goes: the input estimate (the length of the request's messages'
    and tools' JSON) and the ledger's reserve + settle alone (three budgets, memory)."""
    request = parse_chat_request(openai_request(MODEL, stream=False))
    state = build_state(parse_config(config_for(True), "bench", {}))
    guard, variant = state.spend, Variant("parts", state, request)
    assert guard is not None
    budgets = guard.budgets(variant.key, MODEL)
    cpu = time.thread_time()
    for _ in range(count):
        estimate_input(request)
    estimate = (time.thread_time() - cpu) / count
    cpu = time.thread_time()
    for _ in range(count):
        held = await guard.ledger.reserve(0.01, budgets, "id", 60.0, "bench")
        assert isinstance(held, Reservation)
        await guard.ledger.settle(held, 0.001, set(budgets))
    ledger = (time.thread_time() - cpu) / count
    await state.aclose()
    text = f"estimate_input {estimate * 1e6:.2f} us, ledger reserve + settle {ledger * 1e6:.2f} us"
    print(f"parts: {text}")  # noqa: T201


def us(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e6:.2f}"


def print_in_process(title: str, variants: list[Variant]) -> None:
    spend, none, bare = variants
    print(f"\n{title}: median of {len(spend.cpu)} batches, us per request")  # noqa: T201
    print("| variant | CPU us | wall us |\n| --- | --- | --- |")  # noqa: T201
    for variant in variants:
        print(f"| {variant.name} | {us(variant.cpu)} | {us(variant.wall)} |")  # noqa: T201
    paired = [s - n for s, n in zip(spend.cpu, none.cpu, strict=True)]
    nothing = [n - b for n, b in zip(none.cpu, bare.cpu, strict=True)]
    print(f"spend - none: {us(paired)} us CPU; none - bare: {us(nothing)} us CPU")  # noqa: T201


# -- (3) server level ------------------------------------------------------------------------


SERVERS = (("none", False, False), ("priced", True, False), ("spend", True, True))
"""(name, prices, budgets): `priced` tells pricing's share of `spend` from the budgets'."""


def start_servers(run_dir: Path, mock_port: int, store: dict[str, Any] | None) -> list[Any]:
    """The mock, then ToolRelay on each of SERVERS (ports mock_port + 1, + 2, + 3)."""
    options = argparse.Namespace(arg_chunks=50, chunk_delay_ms=1, first_byte_delay_ms=0)
    started = [peers.start_mock(mock_port, run_dir, options)]
    for index, (name, prices, budgets) in enumerate(SERVERS, start=1):
        raw = yaml.safe_load(peers.toolrelay_config(mock_port))
        raw["server"] = spend_server(budgets, store)
        raw = with_prices(raw, prices)
        if not budgets:
            raw["server"].pop("budgets", None)
        path = run_dir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(raw))
        port = mock_port + index
        command = [sys.executable, "-m", "app", "--config", str(path)]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        log = run_dir / f"{name}.log"
        started.append(servers.start(command, log=log, ready=(port, "/health")))
    return started


async def server_side_by_side(args: argparse.Namespace, store: dict[str, Any] | None) -> None:
    run_dir = Path(tempfile.mkdtemp(prefix="bench-spend-"))
    started = start_servers(run_dir, args.mock_port, store)
    pooled: dict[tuple[str, bool], LoadResult] = {}
    try:
        for _ in range(args.rounds):
            for stream in (False, True):
                for index, (name, _, _) in enumerate(SERVERS, start=1):
                    result = await load(started[index].pid, args.mock_port + index, stream, args)
                    cell = (name, stream)
                    pooled[cell] = result if cell not in pooled else pooled[cell].pooled(result)
    finally:
        for server in reversed(started):
            server.stop()
    print(f"\nserver level ({args.rounds} rounds x {args.duration} s, logs in {run_dir})")  # noqa: T201
    print("| cell | answered | errors | RPS | CPU ms/req | peak RSS MiB |")  # noqa: T201
    print("| --- | --- | --- | --- | --- | --- |")  # noqa: T201
    for (name, stream), result in sorted(pooled.items(), key=lambda item: item[0][1]):
        cpu = result.per_request(result.cpu) or 0.0
        label = f"{name} {'stream c=8' if stream else 'non-stream c=32'}"
        line = f"| {label} | {result.ok} | {sum(result.errors.values())} | {result.rps:.0f} |"
        rss = (result.rss_peak or 0) / (1 << 20)
        print(f"{line} {cpu * 1000:.3f} | {rss:.0f} |")  # noqa: T201
        for error, times in result.errors.items():
            print(f"    {times} x {error}")  # noqa: T201


async def load(pid: int, port: int, stream: bool, args: argparse.Namespace) -> LoadResult:
    spec = LoadSpec(
        url=f"http://127.0.0.1:{port}/v1/chat/completions",
        body=openai_request(MODEL, stream=stream),
        check=checker("openai", stream=stream),
        upstream="openai",
        concurrency=8 if stream else 32,
        duration=args.duration,
        headers={"authorization": f"Bearer {KEY}"},
        pid=pid,
    )
    await run_load(replace(spec, duration=1.0))  # warm-up
    return await run_load(spec)


# -- main ------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    memory = await in_process(None, args.batches, args.count)
    print_in_process("memory store, spend work alone", memory)
    await parts(args.count)
    with tempfile.TemporaryDirectory() as directory:
        redis_server = RedisServer(Path(directory))
        redis_server.start()
        try:
            store = {"kind": "redis", "url": redis_server.url}
            shared = await in_process(store, max(3, args.batches // 4), max(200, args.count // 10))
            print_in_process("redis store, spend work alone", shared)
            for name, commands in (await redis_round_trips(redis_server.url, 2000)).items():
                print(f"redis per request, {name} (cpu: Redis' us): {commands}")  # noqa: T201
            if args.server and args.server_redis:
                await server_side_by_side(args, store | {"prefix": "bench-server:"})
        finally:
            redis_server.stop()
    if args.server:
        await server_side_by_side(args, None)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--count", type=int, default=2000, help="requests per batch")
    parser.add_argument("--server", action="store_true", help="also ToolRelay processes")
    parser.add_argument("--server-redis", action="store_true", help="... on a redis store too")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--mock-port", type=int, default=18400)
    return parser.parse_args(argv)


if __name__ == "__main__":
    tune_garbage_collector()
    uvloop.run(main(parse_args()))
