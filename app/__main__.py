"""`python -m app` / `toolrelay`: parse arguments, load the config, serve with uvicorn (one
process, or `--workers N` on one port); or `python -m app eval ...` (app/eval/command.py).
A config that cannot be loaded ends with one line on stderr and exit status 2. The help text
is DESCRIPTION, not this docstring: users are not shown source paths."""

from __future__ import annotations

import argparse
import gc
import os
import sys

import uvicorn
from fastapi import FastAPI

from app.config import Config, ConfigError, load_config
from app.main import create_app
from app.ops.logs import configure_logging

CONFIG_VARIABLE = "TOOLRELAY_CONFIG"
WORKER_APP = "app.__main__:worker_app"
"""What each `--workers` process imports and calls (uvicorn's factory): spawned processes
inherit nothing from this one but the environment."""
WORKER_LOG_LEVEL = "_TOOLRELAY_WORKER_LOG_LEVEL"
"""Internal: carries `--log-level` to the worker processes (empty: the config's level)."""

EPILOG = """subcommands:
  eval    compare models' tool calling on a suite (see: python -m app eval --help)"""


def worker_count(text: str) -> int:
    """argparse type of `--workers`: a whole number of processes, at least one."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count


DESCRIPTION = """ToolRelay: an OpenAI-compatible proxy. Loads the config and serves it
(one process, or --workers N on one port). A config that cannot be loaded ends
with one line on stderr and exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The serving command's options, each help naming its default."""
    parser = argparse.ArgumentParser(
        prog="toolrelay",
        usage="%(prog)s [options] | %(prog)s eval ...",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        default=os.environ.get(CONFIG_VARIABLE, "config.yaml"),
        help="path to config.yaml (default: $TOOLRELAY_CONFIG, then ./config.yaml)",
    )
    parser.add_argument("--host", default="0.0.0.0", help="address to bind (default: 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    parser.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="processes serving the port (default: 1); N > 1 needs server.store kind: redis",
    )
    parser.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="overrides server.log.level from the config (default: the config's, else info)",
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


YOUNG_COLLECTION_EVERY = 20_000
"""Allocations between two young-generation collections (CPython's default: 700)."""


def tune_garbage_collector() -> None:
    """A proxy allocates a few short-lived objects per chunk and keeps almost none: with
    CPython's defaults the collector ran every ~100 chunks and rescanned what start-up
    loaded. Everything loaded by now is frozen (never scanned again) and young collections
    are rarer. Measured side by side (bench/RESULTS.md, issue 23): -11 % CPU per streamed
    chunk and -22 % per non-stream request, peak RSS unchanged."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, 10, 10)


def load_or_exit(path: str) -> Config:
    """The config, or one line on stderr and exit status 2 (never a traceback)."""
    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"toolrelay: {exc}", file=sys.stderr)  # noqa: T201
        raise SystemExit(2) from None


def app_or_exit(config: Config) -> FastAPI:
    """The app, or one line on stderr and exit status 2: building it reads what the config
    names besides itself (the price file), which may be missing or not JSON."""
    try:
        return create_app(config)
    except ConfigError as exc:
        print(f"toolrelay: {exc}", file=sys.stderr)  # noqa: T201
        raise SystemExit(2) from None


def refuse_split_state(config: Config, workers: int) -> None:
    """Stored responses, threads, thinking blocks, limits and cooldowns live in the store: a
    memory store would give each worker its own, and a chained request landing on another
    worker would not find its previous response. Refused before anything is served."""
    if workers > 1 and config.server.store.kind != "redis":
        print(  # noqa: T201
            f"toolrelay: server.store: --workers {workers} needs kind: redis "
            f"(a {config.server.store.kind} store would split the state between processes)",
            file=sys.stderr,
        )
        raise SystemExit(2)


def worker_app() -> FastAPI:
    """One `--workers` process's app (uvicorn calls it in each spawned process): the config
    and log level come through the environment `main` set, and each process tunes its own
    garbage collector once its app is built, as a single process does."""
    config = load_or_exit(os.environ.get(CONFIG_VARIABLE, "config.yaml"))
    configure_logging(config.server.log, os.environ.get(WORKER_LOG_LEVEL) or None)
    app = app_or_exit(config)
    tune_garbage_collector()
    return app


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eval"]:
        from app.eval.command import main as eval_main  # noqa: PLC0415 (serving never loads it)

        raise SystemExit(eval_main(argv[1:]))
    args = parse_args(argv)
    config = load_or_exit(args.config)
    refuse_split_state(config, args.workers)
    configure_logging(config.server.log, args.log_level)
    # Built with --workers too (and then left unused): the config is checked here, once, as
    # each worker will build it, so a bad one ends before any process is spawned.
    target: FastAPI | str = app_or_exit(config)
    if args.workers == 1:
        tune_garbage_collector()
    else:
        target = WORKER_APP
        os.environ[CONFIG_VARIABLE] = os.path.abspath(args.config)
        os.environ[WORKER_LOG_LEVEL] = args.log_level or ""
    uvicorn.run(
        target,
        factory=args.workers > 1,
        workers=args.workers,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        # WebSocket frames uncompressed, like the SSE stream: permessage-deflate (which Codex
        # offers) costs more CPU per event than the whole HTTP stream's write (bench/websocket.py).
        ws_per_message_deflate=False,
        # A message past server.max_body_mb is answered with a 413 error frame, as an HTTP body
        # is; only one past that and 1 MB more makes the server close the socket (1009).
        ws_max_size=config.server.max_body_bytes + (1 << 20),
        log_level=(args.log_level or config.server.log.level),
        log_config=None,  # uvicorn's own lines go through our handler, in the configured format
        access_log=False,  # RequestMiddleware logs one line per request, with its id
        # On SIGTERM, requests in flight (streams too) may finish within the grace period;
        # then they are cancelled, which closes their upstream connections.
        timeout_graceful_shutdown=config.server.shutdown_grace,
    )


if __name__ == "__main__":
    main()
