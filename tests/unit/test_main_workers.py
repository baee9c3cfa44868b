"""`python -m app --workers N` (CONTRACT.md, "Starting it"): N is a whole number >= 1; N > 1
on a memory store is refused with one line naming `server.store` and exit status 2, before
anything is served; on a Redis store each spawned worker builds its own app from the
environment, its garbage collector tuned as a single process's is."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from app import __main__ as entry

DEMO = "providers:\n  demo: {kind: demo}\nmodels:\n  - {name: demo, provider: demo, model: demo}\n"
REDIS_STORE = "server:\n  store: {kind: redis, url: 'redis://127.0.0.1:9/0'}\n"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What `main` hands uvicorn.run (nothing is served); the environment it sets is undone."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append({"app": app, **kw}))
    monkeypatch.setattr(entry, "tune_garbage_collector", lambda: None)
    monkeypatch.setattr(entry, "configure_logging", lambda *args: None)
    monkeypatch.setenv(entry.CONFIG_VARIABLE, "unset")
    monkeypatch.setenv(entry.WORKER_LOG_LEVEL, "unset")
    return calls


@pytest.fixture
def gc_restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("workers", ["2", "8"])
def test_several_workers_on_a_memory_store_are_refused_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    served: list[dict[str, Any]],
    workers: str,
) -> None:
    config = write(tmp_path, DEMO)

    with pytest.raises(SystemExit) as stopped:
        entry.main(["--config", config, "--workers", workers])

    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "server.store" in lines[0]
    assert "Traceback" not in lines[0]
    assert served == []


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", ""])
def test_workers_must_be_a_whole_number_of_at_least_one(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        entry.parse_args(["--workers", value])

    assert stopped.value.code == 2
    assert "--workers" in capsys.readouterr().err


def test_workers_default_to_one() -> None:
    assert entry.parse_args([]).workers == 1


def test_one_worker_on_a_memory_store_serves_the_app_object(
    tmp_path: Path, served: list[dict[str, Any]]
) -> None:
    entry.main(["--config", write(tmp_path, DEMO)])

    [call] = served
    assert isinstance(call["app"], FastAPI)
    assert call["workers"] == 1
    assert call["factory"] is False


def test_several_workers_on_a_redis_store_import_the_worker_factory(
    tmp_path: Path, served: list[dict[str, Any]]
) -> None:
    config = write(tmp_path, REDIS_STORE + DEMO)

    entry.main(["--config", config, "--workers", "3", "--log-level", "debug"])

    [call] = served
    assert (call["app"], call["workers"], call["factory"]) == (entry.WORKER_APP, 3, True)
    assert os.environ[entry.CONFIG_VARIABLE] == config
    assert os.environ[entry.WORKER_LOG_LEVEL] == "debug"


def test_a_worker_builds_its_app_from_the_environment_and_tunes_its_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gc_restored: None
) -> None:
    monkeypatch.setenv(entry.CONFIG_VARIABLE, write(tmp_path, REDIS_STORE + DEMO))
    monkeypatch.setenv(entry.WORKER_LOG_LEVEL, "warning")
    levels: list[str | None] = []
    monkeypatch.setattr(entry, "configure_logging", lambda log, level: levels.append(level))
    gc.set_threshold(700, 10, 10)

    app = entry.worker_app()

    assert isinstance(app, FastAPI)
    assert levels == ["warning"]
    assert gc.get_threshold() == (entry.YOUNG_COLLECTION_EVERY, 10, 10)


def test_help_names_the_eval_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        entry.parse_args(["--help"])

    out = capsys.readouterr().out
    assert "eval" in out.split("subcommands:")[1]
    assert "--workers" in out
