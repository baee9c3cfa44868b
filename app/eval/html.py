"""The eval's comparison as one self-contained HTML page: grouped bar charts drawn as inline
SVG (nothing loaded from the network), then the table. Pure: summaries in, a string out."""

from __future__ import annotations

from html import escape
from typing import Any

from app.eval.table import ERRORS_HEADER, RATES, cost_text

COLOURS = ("#2563eb", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#0ea5e9")
VIOLATIONS = ("missing_required", "type", "enum", "range", "other")
WIDTH, HEIGHT, LEFT, BOTTOM = 760, 280, 48, 64


def render_html(summaries: list[dict[str, Any]], title: str = "ToolRelay eval") -> str:
    rate_chart = grouped_bars(
        "Rates per model (share of calls, or of cases expecting a call)",
        [label for _, label in RATES],
        [(s["model"], [s[key] for key, _ in RATES]) for s in summaries],
        maximum=1.0,
        percent=True,
    )
    violation_chart = grouped_bars(
        "Schema violations by kind (count)",
        list(VIOLATIONS),
        [(s["model"], [s["violations"].get(kind, 0) for kind in VIOLATIONS]) for s in summaries],
    )
    latency_chart = grouped_bars(
        "Latency (ms)",
        ["p50", "p95"],
        [(s["model"], [s["latency_ms"]["p50"], s["latency_ms"]["p95"]]) for s in summaries],
    )
    return _PAGE.format(
        title=escape(title),
        charts=rate_chart + violation_chart + latency_chart,
        table=_table(summaries),
    )


def grouped_bars(
    caption: str,
    groups: list[str],
    series: list[tuple[str, list[float]]],
    *,
    maximum: float | None = None,
    percent: bool = False,
) -> str:
    """One bar per model in each group, a legend naming the models, the value on each bar."""
    top = maximum or max([value for _, values in series for value in values] + [1]) * 1.15
    plot_width, plot_height = WIDTH - LEFT - 16, HEIGHT - BOTTOM - 40
    base = 40 + plot_height
    group_width = plot_width / max(1, len(groups))
    bar_width = group_width * 0.8 / max(1, len(series))
    parts = [f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - 16}" y2="{base}" stroke="#999"/>']
    for index, group in enumerate(groups):
        x = LEFT + index * group_width + group_width / 2
        parts.append(_text(x, HEIGHT - BOTTOM + 20, group, "axis"))
    for position, (model, values) in enumerate(series):
        colour = COLOURS[position % len(COLOURS)]
        for index, value in enumerate(values):
            height = max(plot_height * (value / top if top else 0), 0.5)
            x = LEFT + index * group_width + group_width * 0.1 + position * bar_width
            label = f"{value:.0%}" if percent else f"{value:g}"
            parts.append(
                _rect(x, base - height, bar_width - 2, height, colour, f"{model}: {label}")
            )
            parts.append(_text(x + bar_width / 2 - 1, base - height - 4, label, "value"))
        legend_x = LEFT + position * 170
        parts.append(_rect(legend_x, HEIGHT - 22, 12, 12, colour, model))
        parts.append(_text(legend_x + 18, HEIGHT - 12, model, "legend", anchor="start"))
    size = f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}"'
    return (
        f"<figure><figcaption>{escape(caption)}</figcaption>"
        f'<svg {size} role="img">{"".join(parts)}</svg></figure>'
    )


def _rect(x: float, y: float, width: float, height: float, fill: str, title: str) -> str:
    box = f'x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}"'
    return f'<rect {box} fill="{fill}"><title>{escape(title)}</title></rect>'


def _text(x: float, y: float, text: str, css: str, anchor: str = "middle") -> str:
    place = f'x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"'
    return f'<text {place} class="{css}">{escape(text)}</text>'


def _table(summaries: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{escape(label)}</th>" for _, label in RATES)
    rows = []
    for s in summaries:
        cells = "".join(f"<td>{s[key]:.0%}</td>" for key, _ in RATES)
        latency, tokens = s["latency_ms"], s["tokens"]
        rows.append(
            f"<tr><th>{escape(s['model'])}</th><td>{s['cases']}</td>{cells}"
            f"<td>{_lines(s['errors'])}</td><td>{_lines(s['violations'])}</td>"
            f"<td>{latency['p50']:.1f} / {latency['p95']:.1f}</td>"
            f"<td>{tokens['prompt']} / {tokens['completion']}</td>"
            f"<td>{escape(cost_text(s.get('cost_per_task_usd')))}</td></tr>"
        )
    return (
        f"<table><tr><th>model</th><th>cases</th>{head}<th>{ERRORS_HEADER}</th><th>violations</th>"
        f"<th>latency p50/p95 ms</th><th>tokens in/out</th><th>cost/task</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _lines(mapping: dict[str, int]) -> str:
    return "<br>".join(escape(f"{name} {count}") for name, count in mapping.items()) or "-"


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #111; background: #fff; }}
h1 {{ font-size: 22px; }}
figure {{ margin: 0 0 24px; }}
figcaption {{ font-weight: 600; margin-bottom: 4px; }}
.axis, .legend {{ font-size: 12px; fill: #333; }}
.value {{ font-size: 10px; fill: #111; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ddd; padding: 4px 8px; text-align: right; }}
tr th:first-child {{ text-align: left; }}
</style></head>
<body><h1>{title}</h1>
<p>Structured, recovered and schema-valid rates are shares of the calls a model made; wrong tool
and no call are shares of the cases that expected a call; correct is the share of cases answered
exactly as the suite says (right tools, valid arguments, checks passed).</p>
{charts}
{table}
</body></html>
"""
