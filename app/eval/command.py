"""`python -m app eval`: arguments, the run with a progress bar (plain lines when not on a
terminal), the table, and the `--json` / `--html` files. Exit 0 when it ran, 2 on a bad
argument, config or suite."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from app.config import Config, ConfigError, load_config
from app.eval.deployments import pinned
from app.eval.html import render_html
from app.eval.runner import run_suite
from app.eval.scoring import CaseResult, summarize, verdict
from app.eval.suite import Suite, SuiteError, load_suite
from app.eval.table import render_table


class _Usage(Exception):
    """A bad argument: one line on stderr, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    """eval's options, each help naming its default (or that it is required)."""
    parser = argparse.ArgumentParser(
        prog="toolrelay eval", description="Compare models' tool calling on a suite."
    )
    parser.add_argument(
        "--config",
        default=os.environ.get("TOOLRELAY_CONFIG", "config.yaml"),
        help="path to config.yaml (default: $TOOLRELAY_CONFIG, then ./config.yaml)",
    )
    parser.add_argument(
        "--models", required=True, help="comma-separated configured model names (required)"
    )
    parser.add_argument("--suite", help="a suite YAML file (default: the built-in suite)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="runs of each case per model (default: 1)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="requests in flight (default: 4)"
    )
    parser.add_argument(
        "--json", dest="json_path", help="write the results as JSON here (default: none)"
    )
    parser.add_argument(
        "--html", dest="html_path", help="write a self-contained HTML report (default: none)"
    )
    parser.add_argument(
        "--deployments",
        action="store_true",
        help="also run each deployment of the models on its own: a table row per deployment"
        " (default: off)",
    )
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.concurrency < 1:
        parser.error("--repeat and --concurrency must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)  # argparse exits 2 itself on a bad argument
    console = Console(stderr=True)
    try:
        config = load_config(args.config)
        suite = load_suite(args.suite)
        models = [name.strip() for name in args.models.split(",") if name.strip()]
        unknown = [name for name in models if name not in {m.name for m in config.models}]
        if not models or unknown:
            raise _Usage(f"--models: not configured in {args.config}: {', '.join(unknown) or '-'}")
    except (ConfigError, SuiteError, _Usage) as exc:
        print(f"toolrelay eval: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    pairs: list[tuple[str, str]] = []
    if args.deployments:
        config, pairs = pinned(config, models)
    try:  # the run reads the price file first: missing or not JSON ends it before any case
        results = _run(config, suite, [*models, *(key for _, key in pairs)], args, console)
    except ConfigError as exc:
        print(f"toolrelay eval: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    summaries = [summarize(m, [r for r in results if r.model == m]) for m in models]
    out = Console()
    out = out if out.is_terminal else Console(width=240)
    render_table(summaries, out)
    document: dict[str, Any] = {"models": summaries}
    if pairs:
        document["deployments"] = [
            {**summarize(model, [r for r in results if r.model == key]), "deployment": key}
            for model, key in pairs
        ]
        render_table(document["deployments"], out, by="deployment")
    if args.json_path:
        Path(args.json_path).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    if args.html_path:
        Path(args.html_path).write_text(render_html(summaries), encoding="utf-8")
    return 0


def _run(
    config: Config,
    suite: Suite,
    models: list[str],
    args: argparse.Namespace,
    console: Console,
) -> list[CaseResult]:
    """The run, with a progress bar on a terminal and one plain line per case otherwise."""
    total = len(models) * len(suite.cases) * args.repeat

    def run(progress: Callable[[CaseResult], None]) -> list[CaseResult]:
        options = {"repeat": args.repeat, "concurrency": args.concurrency, "progress": progress}
        return asyncio.run(run_suite(config, suite, models, **options))

    if console.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=console) as bar:
            task = bar.add_task("eval", total=total)
            return run(lambda _result: bar.advance(task))
    done = 0

    def line(result: CaseResult) -> None:
        nonlocal done
        done += 1
        print(f"[{done}/{total}] {progress_line(result)}", file=sys.stderr)  # noqa: T201

    return run(line)


def progress_line(result: CaseResult) -> str:
    """A case as its progress line says it: scored by `verdict`, as the table counts it."""
    return f"{result.model} {result.case}: {verdict(result)}"
