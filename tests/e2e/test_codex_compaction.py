"""The real Codex CLI (0.169.0) compacting remotely through ToolRelay: its built-in `openai`
provider pointed at a real proxy process (`openai_base_url`), a small
`model_auto_compact_token_limit`, and an upstream double whose first answer (a shell call)
reports more input tokens than that. Codex then sends its history ending in
`{"type": "compaction_trigger"}` (remote compaction v2); ToolRelay asks the same model for a
summary (one upstream request: the conversation, then ToolRelay's instructions) and answers
one `compaction` item; Codex goes on with its kept messages and that item, which must reach
the upstream as the summary, without the call and output it replaced, and exit 0.

Codex's built-in provider first tries the Responses WebSocket transport and falls back to
HTTPS after its retries (a few seconds); no config turns that off for the built-in provider in
0.169.0, so this test takes the fallback (the WebSocket transport is another change)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.compaction.instructions import INSTRUCTIONS
from tests.e2e.conftest import ANTHROPIC_KEY, RunningProxy, run_proxy
from tests.helpers.codex_cli import codex_binary, run_codex
from tests.helpers.codex_upstreams import ANSWER, COMMAND, TOOLU_ID
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_upstream import Exchange, Reply, anthropic_frames

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(codex_binary() is None, reason="Codex CLI not installed under .cache"),
]

MODEL = "gpt-5.4"  # a name Codex's catalog knows, served here by Claude
COMPACT_LIMIT = 20000
OVER_LIMIT = {"input_tokens": 60000, "output_tokens": 20}
SUMMARY = "SUMMARY-7f3a: the user asked for out.txt; `echo codex-ok > out.txt` ran. Next: answer."
ASKED = INSTRUCTIONS.splitlines()[0]
CODEX_KEY = "codex-compaction-client-key"
"""Not the suite's CLIENT_KEY: Codex's WebSocket attempts are logged by uvicorn at debug level
with their handshake headers, Authorization included (run_proxy runs at debug and checks its
log for that key). That is the WebSocket transport's to settle, not compaction's."""


class CompactingClaude(MockAnthropic):
    """Claude as Anthropic serves it (every request screened first): asked to summarise, the
    summary, whole; given the summary, the answer; otherwise the shell call, with usage past
    Codex's auto-compact limit."""

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        text = json.dumps(exchange.body)
        if ASKED[:40] in text:
            return Reply(json=anthropic_message([{"type": "text", "text": SUMMARY}], "end_turn"))
        if SUMMARY in text:
            answer = anthropic_message([{"type": "text", "text": ANSWER}], "end_turn")
        else:
            use = {"type": "tool_use", "id": TOOLU_ID, "name": "exec_command"}
            answer = anthropic_message([use | {"input": {"cmd": COMMAND}}], "tool_use")
            answer["usage"] = OVER_LIMIT
        return Reply(frames=anthropic_frames(message_events(answer)))


@pytest.fixture(scope="module")
def claude() -> Iterator[CompactingClaude]:
    with CompactingClaude(ANTHROPIC_KEY) as upstream:
        yield upstream


@pytest.fixture(scope="module")
def proxy(
    claude: CompactingClaude, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    config = f"""
server: {{api_keys: ["{CODEX_KEY}"]}}
router: {{retries: 0}}
providers:
  an: {{kind: anthropic, base_url: "{claude.base_url}", api_key: {ANTHROPIC_KEY}}}
models:
  - {{name: {MODEL}, provider: an, model: claude-sonnet-4-5, max_tokens: 4096}}
"""
    with run_proxy(config, tmp_path_factory.mktemp("codex-compaction")) as running:
        yield running


def test_codex_compacts_through_toolrelay_on_claude(
    proxy: RunningProxy, claude: CompactingClaude, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = run_codex(
        "write codex-ok to out.txt",
        base_url=proxy.base_url,
        model=MODEL,
        workdir=workdir,
        api_key=CODEX_KEY,
        compact_limit=COMPACT_LIMIT,
        timeout=180,
    )
    log = proxy.log.read_text(errors="replace")
    assert result.returncode == 0, f"{result.stderr[-3000:]}\n{log[-3000:]}"
    assert ANSWER in result.stdout
    assert (workdir / "out.txt").read_text().strip() == "codex-ok"
    bodies: list[dict[str, Any]] = [exchange.body for exchange in claude.exchanges]
    asked = [i for i, body in enumerate(bodies) if ASKED[:40] in json.dumps(body)]
    assert len(asked) == 1, [json.dumps(body)[:300] for body in bodies]
    summary_request = json.dumps(bodies[asked[0]])
    assert TOOLU_ID in summary_request  # the conversation to summarise, call and all
    assert "codex-ok" in summary_request
    after = [json.dumps(body) for body in bodies[asked[0] + 1 :]]
    assert after, "Codex did not go on after compaction"
    assert all(SUMMARY in body for body in after)
    assert not any(TOOLU_ID in body for body in after)  # the replaced call and its output
    assert "POST /v1/responses/compact" not in log  # v2: the trigger on /v1/responses
