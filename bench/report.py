"""The results of a run as one markdown table (plus the errors and the harness's own figures),
and as JSON with every raw number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.load import LoadResult
from bench.scenarios import Scenario, Target

MIB = 1 << 20


@dataclass(slots=True)
class Cell:
    scenario: Scenario
    target: Target
    result: LoadResult | None  # None: the target cannot serve this scenario


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1000
    return f"{ms:.2f}" if abs(ms) < 10 else f"{ms:.1f}" if abs(ms) < 100 else f"{ms:.0f}"


def _signed_ms(seconds: float | None) -> str:
    return "-" if seconds is None else ("+" if seconds >= 0 else "") + _ms(seconds)


class Table:
    """Cells by (scenario, target), with the derived figures that need two cells."""

    def __init__(self, cells: list[Cell], events: dict[str, int]) -> None:
        self.cells = cells
        self.events = events  # events the mock sends per stream, by scenario name
        self._by = {(c.scenario.name, c.target.name): c for c in cells}

    def _direct(self, scenario: Scenario) -> LoadResult | None:
        for cell in self.cells:
            if cell.scenario.name == scenario.name and cell.target.direct:
                return cell.result
        return None

    def cpu_per_request(self, cell: Cell) -> float | None:
        return None if cell.result is None else cell.result.per_request(cell.result.cpu)

    def cpu_per_chunk(self, cell: Cell) -> float | None:
        """The marginal CPU of one more stream event: (CPU per stream - CPU per stream of the
        shorter base scenario) / (events per stream - the base's events per stream)."""
        base_name = cell.scenario.base
        if base_name is None or cell.result is None or not cell.result.ok:
            return None
        base = self._by.get((base_name, cell.target.name))
        if base is None or base.result is None or not base.result.ok:
            return None
        stream_cpu, base_cpu = self.cpu_per_request(cell), self.cpu_per_request(base)
        extra_events = self.events[cell.scenario.name] - self.events[base_name]
        if stream_cpu is None or base_cpu is None or extra_events <= 0:
            return None
        return (stream_cpu - base_cpu) / extra_events

    def added(self, cell: Cell, p: float, *, ttfb: bool = False) -> float | None:
        direct = self._direct(cell.scenario)
        if cell.result is None or direct is None or cell.target.direct:
            return None
        mine = cell.result.percentile(p, cell.result.ttfbs if ttfb else None)
        floor = direct.percentile(p, direct.ttfbs if ttfb else None)
        return None if mine is None or floor is None else mine - floor

    def row(self, cell: Cell) -> list[str]:
        name = cell.target.name
        if cell.result is None:
            why = "cannot translate" if cell.scenario.client == "openai" else "no such endpoint"
            why = "no Bedrock model" if cell.scenario.upstream == "bedrock" else why
            return [cell.scenario.name, name, f"n/a ({why})", *[""] * 10]
        r = cell.result
        ttfb = "-"
        if cell.scenario.stream:
            ttfb = _ms(r.percentile(50, r.ttfbs))
            added = self.added(cell, 50, ttfb=True)
            ttfb += f" ({_signed_ms(added)})" if added is not None else ""
        per_chunk = self.cpu_per_chunk(cell)
        rss = "-"
        if r.rss_peak is not None:
            rss = f"{(cell.target.idle_rss or 0) / MIB:.0f} → {r.rss_peak / MIB:.0f}"
        return [
            cell.scenario.name,
            name,
            f"{r.rps:.0f}",
            _ms(r.percentile(50)),
            _ms(r.percentile(90)),
            _ms(r.percentile(99)),
            _signed_ms(self.added(cell, 50)),
            ttfb,
            _ms(self.cpu_per_request(cell)),
            "-" if per_chunk is None else f"{per_chunk * 1e6:.1f}",
            rss,
            f"{sum(r.errors.values())}/{r.completed}",
            _ms(r.per_request(r.upstream_cpu)),
        ]

    def markdown(self) -> str:
        header = [
            "scenario",
            "target",
            "RPS",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "added p50 ms",
            "TTFB p50 ms (added)",
            "CPU ms/req",
            "CPU µs/chunk",
            "RSS MiB idle → peak",
            "errors",
            "mock CPU ms/req",
        ]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(self.row(cell)) + " |" for cell in self.cells]
        return "\n".join(lines)

    def against(self, mine: str = "toolrelay", peer: str = "portkey") -> str:
        """`mine` ÷ `peer` wherever both have the figure, next to issue 23's budgets: CPU per
        chunk of every stream scenario, CPU per non-stream request, and `mine`'s peak RSS
        over the chat cells (the Responses cells store every answer, so they would measure
        the store's size, not the proxy's). Stream rows also give the cores each used in the
        long and the short cell: where one is saturated (~1 core), its CPU per stream is its
        cores over its throughput, so the per-chunk figure compares throughputs there."""
        rows, peak = [], 0
        for cell in self.cells:
            other = self._by.get((cell.scenario.name, peer))
            if cell.target.name != mine or cell.result is None or other is None:
                continue
            if cell.result.rss_peak is not None and cell.scenario.client == "openai":
                peak = max(peak, cell.result.rss_peak)
            cores = ""
            if cell.scenario.stream:
                figure, budget = self.cpu_per_chunk, "<= 0.7x per chunk"
                cores = f"{self._cores(cell)} / {self._cores(other)}"
            else:
                figure, budget = self.cpu_per_request, "<= 0.45x per request"
            ours, theirs = figure(cell), figure(other)
            if ours is not None and theirs:
                rows.append(f"| {cell.scenario.name} | {ours / theirs:.2f}x | {budget} | {cores} |")
        if not rows:
            return f"No scenario had figures for both {mine} and {peer}."
        lines = [
            f"| scenario | {mine} ÷ {peer}, CPU | issue 23 budget "
            f"| cores in use, long, short stream: {mine} / {peer} |",
            "|---|---|---|---|",
        ]
        lines += rows
        lines.append(
            f"\n{mine}'s peak RSS over the chat cells: {peak / MIB:.0f} MiB (≤ ~85 MB). "
            "A target near 1 core in a stream cell is saturated there: its CPU per stream is "
            "then its cores over its throughput, and the per-chunk ratio compares throughputs "
            "more than the cost of a chunk (bench/RESULTS.md, issue 23)."
        )
        return "\n".join(lines)

    def side_by_side(self) -> str:
        """Each scenario against its `versus` on the same target: CPU per chunk for streams
        (the ratio is issue 30's Bedrock budget), per request otherwise (issue 21's embeddings;
        the difference, SigV4 signing's cost per request)."""
        lines = [
            "| target | scenario | against | CPU, this / that | ratio | difference | budget |",
            "|---|---|---|---|---|---|---|",
        ]
        for cell in self.cells:
            other = self._by.get((cell.scenario.versus or "", cell.target.name))
            if other is None or cell.target.direct:
                continue
            stream = cell.scenario.stream and other.scenario.stream
            figure, unit = (
                (self.cpu_per_chunk, "µs/chunk") if stream else (self.cpu_per_request, "µs/req")
            )
            mine, theirs = figure(cell), figure(other)
            if mine is None or not theirs:
                continue
            lines.append(
                f"| {cell.target.name} | {cell.scenario.name} | {other.scenario.name} "
                f"| {mine * 1e6:.1f} / {theirs * 1e6:.1f} {unit} | {mine / theirs:.2f}x "
                f"| {(mine - theirs) * 1e6:+.1f} {unit} | {cell.scenario.budget} |"
            )
        return (
            "\n".join(lines) if len(lines) > 2 else "No scenario here has its `versus` beside it."
        )

    def _cores(self, cell: Cell) -> str:
        """`long, short`: the cores the target used in a stream cell and in its base."""
        base = self._by.get((cell.scenario.base or "", cell.target.name))
        figures = [c.result.cores if c and c.result else None for c in (cell, base)]
        return ", ".join("-" if f is None else f"{f:.2f}" for f in figures)

    def errors(self) -> str:
        """Every distinct wrong answer, by target and scenario."""
        lines = []
        for cell in self.cells:
            if cell.result is None or not cell.result.errors:
                continue
            lines.append(f"- {cell.target.name}, {cell.scenario.name}:")
            lines += [
                f"  - {count} x {error}" for error, count in cell.result.errors.most_common(5)
            ]
        return "\n".join(lines) if lines else "No errors: every answer was checked and correct."

    def harness(self) -> str:
        """The mock's ceiling, and how much CPU the load generator itself took (in cores: CPU
        seconds per second) while loading each target."""
        lines = ["| scenario | direct RPS (mock ceiling) | load generator CPU, cores, by target |"]
        lines.append("|---|---|---|")
        rows: dict[str, tuple[str, list[str]]] = {}
        for cell in self.cells:
            r = cell.result
            if r is None or not r.elapsed:
                continue
            ceiling, used = rows.get(cell.scenario.name, ("-", []))
            if cell.target.direct:
                ceiling = f"{r.rps:.0f}"
            used.append(f"{cell.target.name} {r.client_cpu / r.elapsed:.2f}")
            rows[cell.scenario.name] = (ceiling, used)
        lines += [f"| {name} | {c} | {', '.join(u)} |" for name, (c, u) in rows.items()]
        return "\n".join(lines)


def as_json(table: Table, meta: dict[str, Any]) -> dict[str, Any]:
    cells = []
    for cell in table.cells:
        entry: dict[str, Any] = {"scenario": cell.scenario.name, "target": cell.target.name}
        r = cell.result
        if r is not None:
            entry |= {
                "ok": r.ok,
                "errors": dict(r.errors),
                "elapsed_s": r.elapsed,
                "rps": r.rps,
                "latency_ms": {f"p{p}": _num(r.percentile(p)) for p in (50, 90, 99)},
                "ttfb_ms_p50": _num(r.percentile(50, r.ttfbs)),
                "added_p50_ms": _num(table.added(cell, 50)),
                "cpu_ms_per_request": _num(table.cpu_per_request(cell)),
                "cpu_us_per_chunk": _num(table.cpu_per_chunk(cell), 1e6),
                "mock_cpu_ms_per_request": _num(r.per_request(r.upstream_cpu)),
                "client_cpu_ms_per_request": _num(r.per_request(r.client_cpu)),
                "cpu_cores": _num(r.cores, 1),
                "client_cpu_cores": _num(r.client_cpu / r.elapsed if r.elapsed else None, 1),
                "rss_idle_bytes": cell.target.idle_rss,
                "rss_peak_bytes": r.rss_peak,
            }
        cells.append(entry)
    return meta | {"cells": cells}


def _num(seconds: float | None, scale: float = 1000.0) -> float | None:
    return None if seconds is None else round(seconds * scale, 4)
