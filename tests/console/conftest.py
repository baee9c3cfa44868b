"""The console's tests run against both databases: SQLite in a temp dir, and PostgreSQL in a
throw-away cluster of their own (initdb refuses root: it runs as the `postgres` user)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import make_config, raw_config

ADMIN_KEY = "admin-key-SECRET-777"
PG_BIN = Path("/usr/lib/postgresql")


def _pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(PG_BIN.glob("*/bin/pg_ctl")) if PG_BIN.exists() else []
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    return args if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--", *args]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL cluster for the session: its URL without a database. Its directory is
    outside pytest's (which the `postgres` user cannot enter)."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's binaries are not installed (.ci/run installs them)")
    root = Path(tempfile.mkdtemp(prefix="toolrelay-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    subprocess.run(
        _as_postgres([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "start"]
    subprocess.run(_as_postgres([*start, "-l", str(root / "log")]), check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        subprocess.run(_as_postgres(stop), check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def new_pg_database(server: str) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    psql = shutil.which("psql") or str((_pg_bin() or Path()) / "psql")
    subprocess.run(
        [psql, f"{server}/postgres", "-q", "-c", f"CREATE DATABASE {name}"],
        check=True,
        capture_output=True,
    )
    return f"{server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'toolrelay.db'}"
    return new_pg_database(request.getfixturevalue("pg_server"))


def console_raw(url: str | None, **server: Any) -> dict[str, Any]:
    raw = raw_config()
    if url is not None:
        raw["server"]["database"] = {"url": url}
    raw["server"]["admin_keys"] = [ADMIN_KEY]
    raw["server"].update(server)
    return raw


def console_config(url: str | None, **server: Any) -> Any:
    return make_config(console_raw(url, **server))


ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


async def wait_rows(proxy: Any, count: int, **params: Any) -> list[dict[str, Any]]:
    """The log's rows once the writer wrote `count` (it writes off the request path)."""
    await proxy._transport.app.state.proxy.console.writer.flush()
    answer = await proxy.get("/v1/logs", params=params, headers=ADMIN)
    assert answer.status_code == 200, answer.text
    rows: list[dict[str, Any]] = answer.json()["data"]
    assert len(rows) == count, rows
    return rows
