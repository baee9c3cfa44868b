"""A real redis-server for the tests: the one `.ci/run` starts (named by
$TOOLRELAY_TEST_REDIS_URL), or a private one started here on a free port, which a test may
also stop and start again to see what the proxy does while its store is down."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

ENV_URL = "TOOLRELAY_TEST_REDIS_URL"
STARTUP_SECONDS = 10


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """`redis-server` on 127.0.0.1 in `directory`, without persistence."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed: `bash .ci/run` installs it (Debian)")
        self.binary = binary
        self.directory = directory
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.directory)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_until_up(self.url)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


def wait_until_up(url: str) -> None:
    client = redis.Redis.from_url(url, socket_timeout=1)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
        finally:
            client.close()


def shared_url() -> str | None:
    return os.environ.get(ENV_URL) or None
