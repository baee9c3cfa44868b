"""Claude Code's gateway model discovery (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1, issue
38) against a real proxy process, through a recording proxy: the CLI's `GET /v1/models` is the
one recorded in tests/recordings/claude_code/models_discovery.json, its answer is Anthropic's
list, and the CLI keeps the models it discovered (its cache file and debug log, what its
`/model` picker lists "From gateway"), then runs a session on one of them."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, keyed_config, run_proxy
from tests.e2e.test_claude_code import claude_code_binary
from tests.helpers.recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e

RECORDING = Path(__file__).parents[1] / "recordings" / "claude_code" / "models_discovery.json"
DISCOVERED = "claude-gateway-demo"
"""Only ids starting `claude` or `anthropic` are kept by Claude Code; `demo` is not."""


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    config = keyed_config(
        "  demo: {kind: demo}",
        f"""  - {{name: {DISCOVERED}, provider: demo, model: demo}}
  - {{name: demo, provider: demo, model: demo}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("claude-code-discovery")) as running:
        yield running


def run_with_discovery(recorder: RecordingProxy, home: Path) -> list[dict[str, Any]]:
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": recorder.base_url,
        "ANTHROPIC_API_KEY": CLIENT_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1",
    }
    command = [str(claude_code_binary()), "-p", "Say hello.", "--tools", ""]
    command += ["--output-format", "stream-json", "--verbose", "--model", DISCOVERED]
    command += ["--debug-file", str(home / "debug.log")]
    finished = subprocess.run(
        command,
        cwd=home,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    return [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]


def test_claude_code_discovers_the_models_in_anthropics_shape(
    proxy: RunningProxy, tmp_path: Path
) -> None:
    with RecordingProxy(f"http://127.0.0.1:{proxy.port}") as recorder:
        lines = run_with_discovery(recorder, tmp_path)

    recorded = json.loads(RECORDING.read_text())
    asked = [a for a in recorder.answered if a.exchange.path.startswith("/v1/models")]
    assert len(asked) == 1
    exchange = asked[0].exchange
    assert (exchange.method, exchange.path) == (recorded["method"], recorded["path"])
    expected = recorded["headers"] | {"x-api-key": CLIENT_KEY}
    assert {name: exchange.headers.get(name) for name in expected} == expected
    assert "anthropic-beta" not in exchange.headers
    assert asked[0].status == 200
    assert asked[0].body == {
        "data": [anthropic_model(DISCOVERED), anthropic_model("demo")],
        "has_more": False,
        "first_id": DISCOVERED,
        "last_id": "demo",
    }

    cached = json.loads((tmp_path / ".claude" / "cache" / "gateway-models.json").read_text())
    assert cached["baseUrl"] == recorder.base_url
    assert cached["models"] == [{"id": DISCOVERED, "display_name": DISCOVERED}]
    assert "[gatewayDiscovery] cached 1 models" in (tmp_path / "debug.log").read_text()
    result = lines[-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert list(result["modelUsage"]) == [DISCOVERED]


def anthropic_model(name: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
    }
