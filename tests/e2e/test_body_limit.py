"""A 160 MB body, streamed in 1 MB writes to a real `python -m app`, to every API the proxy
reads (issue 29 item 5): each is a 413 in its API's shape, answered while the client is still
sending, and the server's peak RSS grows by less than 64 MB over all of them (the default
`server.max_body_mb` of 32: at most that much is held, then dropped)."""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import RunningProxy, run_app, run_proxy

pytestmark = pytest.mark.e2e

MB = 1 << 20
WRITES = 160
GROWTH_LIMIT = 64 * MB
CONFIG = """
providers:
  demo: {kind: demo}
models:
  - {name: demo, provider: demo, model: demo}
"""
PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings"]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    with run_proxy(CONFIG, tmp_path_factory.mktemp("body-limit")) as running:
        yield running


def peak_rss(proxy: RunningProxy) -> int:
    """The server process's peak resident set (VmHWM), in bytes."""
    assert proxy.process is not None
    status = Path(f"/proc/{proxy.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def send_until_answered(port: int, path: str) -> tuple[int, bytes, int]:
    """Streams `{`, WRITES chunked 1 MB writes of spaces and `}` (an empty JSON object),
    stopping as soon as an answer can be read; the answer's status, its body, and the writes
    made."""
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()
    chunk = f"{MB:x}\r\n".encode() + b" " * MB + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head + b"1\r\n{\r\n")
        writes = 0
        while writes < WRITES and not select.select([connection], [], [], 0)[0]:
            connection.sendall(chunk)
            writes += 1
        if writes == WRITES:
            connection.sendall(b"1\r\n}\r\n0\r\n\r\n")  # the end: a server that read it all answers
        return _read_answer(connection, writes)


def _read_answer(connection: socket.socket, writes: int) -> tuple[int, bytes, int]:
    """The answer's status and body, read as far as its Content-Length: the connection stays
    open (the server drops the rest of the body and keeps it alive)."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += _recv(connection)
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(headers["content-length"]):
        body += _recv(connection)
    return int(lines[0].split()[1]), body, writes


def _recv(connection: socket.socket) -> bytes:
    data = connection.recv(65536)
    assert data, "the server closed the connection before answering"
    return data


def test_a_160_mb_body_is_refused_on_every_api_without_growing_the_server(
    proxy: RunningProxy,
) -> None:
    before = peak_rss(proxy)

    for path in PATHS:
        status, body, writes = send_until_answered(proxy.port, path)

        assert status == 413, body
        assert writes < WRITES, f"{path}: the whole body was sent before any answer"
        answer = json.loads(body)
        if path.startswith("/v1/messages"):
            assert answer["type"] == "error"
            assert answer["error"]["type"] == "request_too_large"
        else:
            assert answer["error"]["code"] == "request_too_large"
        assert "server.max_body_mb" in body.decode()

    grown = peak_rss(proxy) - before
    assert grown < GROWTH_LIMIT, f"the server's peak RSS grew by {grown / MB:.0f} MB"


BAD_VALUES = {
    "string": '"lots"',
    "negative": "-1",
    "zero": "0",
    "list": "[32]",
    "mapping": "{mb: 32}",
    "boolean": "yes",
    "null": "null",
    "infinite": ".inf",
}


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_bad_max_body_mb_stops_start_up_with_one_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"server:\n  max_body_mb: {value}\n{CONFIG}")

    result = run_app("--config", str(path), "--host", "127.0.0.1", "--port", "0")

    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert str(path) in lines[0]
    assert "server.max_body_mb" in lines[0]
