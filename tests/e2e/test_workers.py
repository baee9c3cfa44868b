"""`python -m app --workers 2` on a Redis store (issue 29, item 6): a chain of stored responses
(`previous_response_id`), each request on a fresh connection, holds wherever the kernel hands
each connection; the chain is followed until it has crossed from one worker to the other (the
serving process of each connection is read from /proc), and every process is gone after."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO, _wait_until_healthy, free_port, proxy_environment
from tests.helpers.redis_server import shared_url

pytestmark = pytest.mark.e2e

MIN_CHAIN = 20
MAX_CHAIN = 200
"""The chain goes on past MIN_CHAIN until both workers served a link of it (bounded)."""


def config_yaml(redis_url: str) -> str:
    return f"""
server:
  store: {{kind: redis, url: "{redis_url}"}}
providers:
  demo: {{kind: demo}}
models:
  - {{name: demo, provider: demo, model: demo}}
"""


@dataclass
class Proxy:
    port: int
    parent: int
    workers: set[int] = field(default_factory=set)
    left_after_stop: set[int] = field(default_factory=set)


@contextmanager
def two_workers(redis_url: str, directory: Path) -> Iterator[Proxy]:
    """`python -m app --workers 2`, stopped by SIGTERM as a container would be; what is left
    of it once the parent has exited is noted, then its whole process group killed."""
    config = directory / "config.yaml"
    config.write_text(config_yaml(redis_url))
    log = directory / "proxy.log"
    port = free_port()
    command = [sys.executable, "-m", "app", "--config", str(config), "--workers", "2"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=proxy_environment(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proxy = Proxy(port, process.pid)
    try:
        _wait_until_healthy(process, port, log)
        proxy.workers = {pid for pid in children(process.pid) if "spawn_main" in cmdline(pid)}
        yield proxy
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        finally:
            proxy.left_after_stop = {pid for pid in proxy.workers if Path(f"/proc/{pid}").exists()}
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def serving_process(port: int, client_port: int, candidates: set[int]) -> int:
    """Which of `candidates` holds the server end of the connection from `client_port`."""
    local, remote = f"0100007F:{port:04X}", f"0100007F:{client_port:04X}"
    inodes = {
        fields[9]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if (fields := line.split())[1:3] == [local, remote]
    }
    for pid in candidates:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            link = os.readlink(fd) if fd.is_symlink() else ""
            if link.startswith("socket:[") and link[8:-1] in inodes:
                return pid
    raise AssertionError(f"no process among {candidates} holds the connection")


def respond(port: int, body: dict[str, object], workers: set[int]) -> tuple[dict[str, str], int]:
    """POST /v1/responses on a new connection: the answer, and the worker that served it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.request(
            "POST", "/v1/responses", json.dumps(body), {"content-type": "application/json"}
        )
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == 200, answer
        client_port = connection.sock.getsockname()[1]
        return answer, serving_process(port, client_port, workers)
    finally:
        connection.close()


@pytest.mark.skipif(
    shared_url() is None and shutil.which("redis-server") is None,
    reason="no Redis: neither $TOOLRELAY_TEST_REDIS_URL nor a redis-server binary",
)
def test_a_chain_of_stored_responses_holds_across_two_workers(
    redis_url: str, tmp_path: Path
) -> None:
    with two_workers(redis_url, tmp_path) as proxy:
        assert len(proxy.workers) == 2
        served_by: list[int] = []
        previous: str | None = None
        while len(served_by) < MIN_CHAIN or (
            len(set(served_by)) < 2 and len(served_by) < MAX_CHAIN
        ):
            body: dict[str, object] = {"model": "demo", "input": f"turn {len(served_by)}"}
            if previous is not None:
                body["previous_response_id"] = previous
            answer, pid = respond(proxy.port, body, proxy.workers)
            assert answer["previous_response_id"] == previous
            previous = answer["id"]
            served_by.append(pid)
        assert set(served_by) == proxy.workers
    assert proxy.left_after_stop == set()


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
