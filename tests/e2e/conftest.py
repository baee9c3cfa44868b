"""Real proxy processes (`python -m app`) on 127.0.0.1, started from a temp config.yaml and
always killed; their logs are checked for secrets when they stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest

from tests.helpers.mock_anthropic import MockAnthropic
from tests.helpers.mock_gemini import MockGemini
from tests.helpers.mock_upstream import MockUpstream

REPO = Path(__file__).resolve().parents[2]
PROVIDER_KEY = "sk-test-SECRET-123"
ANTHROPIC_KEY = "sk-ant-test-SECRET-789"
CLIENT_KEY = "client-key-SECRET-456"
GEMINI_KEY = "AIza-test-SECRET-321"
SECRETS = (PROVIDER_KEY, ANTHROPIC_KEY, CLIENT_KEY, GEMINI_KEY)
UNSET_VAR = "TOOLRELAY_E2E_SURELY_UNSET_KEY"
STARTUP_SECONDS = 20


@dataclass(frozen=True)
class RunningProxy:
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proxy_environment() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRELAY")}
    return environ | {"PYTHONUNBUFFERED": "1"}


def run_app(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """`python -m app ARGS` to completion (for start-up failures)."""
    command = [sys.executable, "-m", "app", *args]
    return subprocess.run(
        command,
        cwd=REPO,
        env=proxy_environment() | (env or {}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def run_proxy(
    config_yaml: str, directory: Path, env: dict[str, str] | None = None
) -> Iterator[RunningProxy]:
    """`python -m app` serving `config_yaml` until the block ends; killed whatever happens.
    `env`: more environment for it (AWS credentials for SigV4...)."""
    config_path = directory / "config.yaml"
    config_path.write_text(config_yaml)
    log_path = directory / "proxy.log"
    port = free_port()
    command = [sys.executable, "-m", "app", "--config", str(config_path)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "debug"]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=proxy_environment() | (env or {}),
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_healthy(process, port, log_path)
        yield RunningProxy(port, log_path, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    logged = log_path.read_text(errors="replace")
    for secret in SECRETS:
        assert secret not in logged, f"a configured secret leaked into the proxy's log {log_path}"


def _wait_until_healthy(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the proxy exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail(f"the proxy did not become healthy:\n{log_path.read_text()}")


def _check_response(response: httpx.Response) -> None:
    """Every answer the SDK gets: no secret in its headers, nor in its body unless a stream
    (reading a stream here would defeat it; the stream tests check what they receive)."""
    seen = "\n".join(f"{name}: {value}" for name, value in response.headers.multi_items())
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        seen += response.read().decode("utf-8", "replace")
    for secret in SECRETS:
        assert secret not in seen, f"a configured secret leaked in a response: {seen[:400]}"


def sdk_client(proxy: RunningProxy, api_key: str = CLIENT_KEY) -> openai.OpenAI:
    http_client = httpx.Client(event_hooks={"response": [_check_response]}, timeout=20)
    return openai.OpenAI(
        base_url=proxy.base_url, api_key=api_key, max_retries=0, http_client=http_client
    )


def keyed_config(providers: str, models: str) -> str:
    """A config.yaml with the tests' client key and one attempt per request, around the given
    `providers:` and `models:` entries (YAML, indented under their keys)."""
    return f"""
server:
  api_keys: ["{CLIENT_KEY}"]
router:
  retries: 0
providers:
{providers}
models:
{models}
"""


CLAUDE_MODEL = "claude-sonnet-4-5"
GEMINI_MODEL = "gemini-2.5-flash"


def every_kind_config(
    openai_url: str,
    anthropic_url: str,
    gemini_url: str,
    *,
    more_providers: str = "",
    more_models: str = "",
) -> str:
    """One model per kind, each on its own mock (`mini`, `claude`, `gem`), and the demo: the
    config of the modules that run a client against every kind (`more_*`: YAML lines for
    other kinds, the cloud ones)."""
    return keyed_config(
        f"""  oa: {{kind: openai, base_url: "{openai_url}/v1", api_key: {PROVIDER_KEY}}}
  an: {{kind: anthropic, base_url: "{anthropic_url}", api_key: {ANTHROPIC_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini_url}", api_key: {GEMINI_KEY}}}
  demo: {{kind: demo}}{more_providers}""",
        f"""  - {{name: mini, provider: oa, model: gpt-4o-mini}}
  - {{name: claude, provider: an, model: {CLAUDE_MODEL}, max_tokens: 1024}}
  - {{name: gem, provider: gm, model: {GEMINI_MODEL}}}
  - {{name: demo, provider: demo, model: demo}}{more_models}""",
    )


def proxy_config(upstream: MockUpstream) -> str:
    """Every kind, pointed at the mock upstream (demo is built in)."""
    return keyed_config(
        f"""  oa:
    kind: openai
    base_url: {upstream.base_url}/v1
    api_key: {PROVIDER_KEY}
  keyless:
    kind: openai
    base_url: {upstream.base_url}/v1
    api_key: ${{{UNSET_VAR}}}
  an:
    kind: anthropic
    base_url: {upstream.base_url}
    api_key: {ANTHROPIC_KEY}
  demo:
    kind: demo""",
        """  - {name: mini, provider: oa, model: gpt-4o-mini}
  - {name: keyless, provider: keyless, model: gpt-4o-mini}
  - {name: claude, provider: an, model: claude-sonnet-4-5, max_tokens: 1024}
  - {name: demo, provider: demo, model: demo}""",
    )


@pytest.fixture(scope="module")
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    upstream: MockUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    with run_proxy(proxy_config(upstream), tmp_path_factory.mktemp("proxy")) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_upstream(request: pytest.FixtureRequest) -> None:
    if "upstream" in request.fixturenames:
        request.getfixturevalue("upstream").reset()


KindMocks = tuple[MockUpstream, MockGemini, MockAnthropic]
"""An OpenAI-compatible, a validating Gemini and a validating Anthropic mock."""


@pytest.fixture(scope="module")
def kind_mocks() -> Iterator[KindMocks]:
    """One mock per translated kind for a module; tests take `oa`, `gemini` or `an`, reset."""
    with MockUpstream() as oa, MockGemini(GEMINI_KEY) as gemini, MockAnthropic(ANTHROPIC_KEY) as an:
        yield oa, gemini, an


@pytest.fixture
def oa(kind_mocks: KindMocks) -> MockUpstream:
    kind_mocks[0].reset()
    return kind_mocks[0]


@pytest.fixture
def gemini(kind_mocks: KindMocks) -> MockGemini:
    kind_mocks[1].reset()
    return kind_mocks[1]


@pytest.fixture
def an(kind_mocks: KindMocks) -> MockAnthropic:
    kind_mocks[2].reset()
    return kind_mocks[2]
