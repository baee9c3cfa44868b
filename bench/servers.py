"""Start a server as a child process in its own session, wait until it answers, stop it."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


class StartError(RuntimeError):
    pass


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """SIGTERM to the process group this server was started in (its workers too), then
        SIGKILL after 10 s."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)


def start(
    command: list[str],
    *,
    log: Path,
    ready: tuple[int, str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> Server:
    """Runs `command` with stdout/stderr to `log` and waits until GET 127.0.0.1:`ready`
    answers 2xx. The server is named after its log file."""
    name = log.stem
    log.parent.mkdir(parents=True, exist_ok=True)
    child_env = os.environ | {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env | (env or {}),
            cwd=cwd,
            start_new_session=True,
        )
    server = Server(name, process, log)
    port, path = ready
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StartError(f"{name} exited with {process.returncode}; see {log}:\n{_tail(log)}")
        if _answers(port, path):
            return server
        time.sleep(0.2)
    server.stop()
    raise StartError(
        f"{name} did not answer GET {path} on port {port} in {timeout:.0f} s; see {log}"
    )


def _answers(port: int, path: str) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        return 200 <= connection.getresponse().status < 300
    except OSError:
        return False
    finally:
        connection.close()


def _tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def port_is_free(port: int) -> bool:
    return not _listening(port)


def _listening(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    try:
        connection.connect()
        return True
    except OSError:
        return False
    finally:
        connection.close()
