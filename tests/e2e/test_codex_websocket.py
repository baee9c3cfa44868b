"""The real Codex CLI (pinned 0.169.0) over the Responses WebSocket transport: a custom
provider with `supports_websockets = true`, and Codex's built-in provider pointed at the proxy
with `openai_base_url`, each completing a shell tool-call session through the proxy with no
fallback to HTTPS and no reconnect (CONTRACT.md, "Codex and Claude Code: all of their
protocol"), on the openai, anthropic and gemini kinds. The upstreams are
tests/helpers/codex_upstreams.py's scripted doubles; their count of requests shows Codex's
warm-up (`generate: false`) never reached them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers.codex_cli import CODEX_VERSION, codex_binary, run_shell_task
from tests.helpers.codex_upstreams import (
    ANSWER,
    ScriptedAnthropic,
    ScriptedGemini,
    ScriptedOpenAI,
    tool_result,
)
from tests.helpers.mock_upstream import MockUpstream

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        codex_binary() is None,
        reason=f"Codex {CODEX_VERSION} is not installed under .cache/codex: `bash .ci/run` "
        f"installs it (npm install --prefix .cache/codex @openai/codex@{CODEX_VERSION})",
    ),
]

MODEL, CLAUDE, GEMINI = "gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"
ACCEPTED = '"WebSocket /v1/responses" [accepted]'


@pytest.fixture(scope="module")
def upstreams() -> Iterator[dict[str, MockUpstream]]:
    with (
        ScriptedOpenAI(PROVIDER_KEY) as oa,
        ScriptedAnthropic(ANTHROPIC_KEY) as claude,
        ScriptedGemini(GEMINI_KEY) as gemini,
    ):
        yield {MODEL: oa, CLAUDE: claude, GEMINI: gemini}


@pytest.fixture(scope="module")
def proxy(
    upstreams: dict[str, MockUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    url = {model: upstream.base_url for model, upstream in upstreams.items()}
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{url[MODEL]}/v1", api_key: {PROVIDER_KEY}}}
  an: {{kind: anthropic, base_url: "{url[CLAUDE]}", api_key: {ANTHROPIC_KEY}}}
  gm: {{kind: gemini, base_url: "{url[GEMINI]}", api_key: {GEMINI_KEY}}}""",
        f"""  - {{name: {MODEL}, provider: oa, model: {MODEL}}}
  - {{name: {CLAUDE}, provider: an, model: {CLAUDE}, max_tokens: 4096}}
  - {{name: {GEMINI}, provider: gm, model: {GEMINI}}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("codex-ws")) as running:
        yield running


@pytest.mark.parametrize(
    ("transport", "model"),
    [("websockets", MODEL), ("websockets", CLAUDE), ("websockets", GEMINI), ("builtin", MODEL)],
)
def test_codex_completes_a_tool_session_over_websockets(
    proxy: RunningProxy,
    upstreams: dict[str, MockUpstream],
    tmp_path: Path,
    transport: str,
    model: str,
) -> None:
    upstream = upstreams[model]
    upstream.reset()
    accepted_before = proxy.log.read_text(errors="replace").count(ACCEPTED)
    finished, report, workdir = run_shell_task(
        "codex-ok",
        base_url=proxy.base_url,
        model=model,
        tmp_path=tmp_path,
        proxy_log=proxy.log,
        api_key=CLIENT_KEY,
        transport=transport,
    )
    logged = proxy.log.read_text(errors="replace")
    assert finished.returncode == 0, report
    assert (workdir / "out.txt").read_text().strip() == "codex-ok", report
    assert ANSWER in finished.stdout, report
    assert "Falling back from WebSockets" not in finished.stderr, report
    assert "Reconnecting" not in finished.stderr, report
    assert logged.count(ACCEPTED) - accepted_before == 1, report  # one socket, no reconnect
    bodies = [exchange.body for exchange in upstream.exchanges]
    # The warm-up never reached the upstream: the tool call, then the answer to its result.
    assert len(bodies) == 2, [json.dumps(body)[:300] for body in bodies]
    turns = [body.get("messages") or body["contents"] for body in bodies]
    assert tool_result(turns[0]) is None
    assert tool_result(turns[1]) is not None
