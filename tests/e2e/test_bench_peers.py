"""bench/peers.py's ToolRelay with --workers 2 is what the contract documents: ToolRelay's own
`python -m app --workers N` on a redis store (a memory store split between uvicorn workers is
refused by the contract), started, serving, and gone with its redis-server after."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from bench import peers
from tests.e2e.conftest import free_port

pytestmark = pytest.mark.e2e


def test_toolrelay_with_workers_runs_the_documented_command_on_redis(tmp_path: Path) -> None:
    port = free_port()
    server, target = peers.start_toolrelay(port, free_port(), tmp_path, workers=2)
    try:
        command = list(server.process.args)  # type: ignore[arg-type]
        assert command[1:3] == ["-m", "app"]
        assert command[command.index("--workers") + 1] == "2"
        config = Path(command[command.index("--config") + 1]).read_text()
        assert "kind: redis" in config

        client = openai.OpenAI(base_url=f"{target.base_url}/v1", api_key="unused")
        assert "bench-openai" in {model.id for model in client.models.list()}
    finally:
        server.stop()
    assert server.process.poll() is not None
    redis = getattr(server, "redis", None)
    assert redis is not None
    assert redis.process is None
