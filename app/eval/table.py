"""The eval's comparison as a terminal table (rich): a row per model, or (`--deployments`) a
row per deployment with the same columns."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

RATES = (
    ("structured_rate", "structured"),
    ("recovered_rate", "recovered"),
    ("valid_rate", "schema-valid"),
    ("wrong_tool_rate", "wrong tool"),
    ("no_call_rate", "no call"),
    ("correct_rate", "correct"),
)


ERRORS_HEADER = "errors (cases, by reason)"
"""The errors column counts cases that were not correct, each once (scoring.verdict)."""


def counts(mapping: dict[str, int], separator: str = ", ") -> str:
    return separator.join(f"{name} {count}" for name, count in mapping.items()) or "-"


def cost_text(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.6f}".rstrip("0").rstrip(".")


def render_table(summaries: list[dict[str, Any]], console: Console, by: str = "model") -> None:
    """`by`: the summaries' field that names a row (`model` or `deployment`)."""
    table = Table(title=f"ToolRelay eval: tool calling per {by}")
    table.add_column(by, style="bold", no_wrap=True)
    table.add_column("cases", justify="right")
    for _, label in RATES:
        table.add_column(label, justify="right")
    table.add_column(ERRORS_HEADER, no_wrap=True)
    table.add_column("violations", no_wrap=True)
    table.add_column("latency p50/p95 ms", justify="right")
    table.add_column("tokens in/out", justify="right")
    table.add_column("cost/task", justify="right")
    for summary in summaries:
        latency, tokens = summary["latency_ms"], summary["tokens"]
        table.add_row(
            summary[by],
            str(summary["cases"]),
            *(f"{summary[key]:.0%}" for key, _ in RATES),
            counts(summary["errors"], "\n"),
            counts(summary["violations"], "\n"),
            f"{latency['p50']:.1f} / {latency['p95']:.1f}",
            f"{tokens['prompt']} / {tokens['completion']}",
            cost_text(summary.get("cost_per_task_usd")),
        )
    console.print(table)
