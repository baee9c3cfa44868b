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
from tests.helpers.codex_upstreams import ANSWER, CALL_ID, COMMAND, SIGNATURE, TOOLU_ID
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_gemini import MockGemini, gemini_answer, issued_signatures
from tests.helpers.mock_upstream import (
    OPENAI_PATH,
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
    refused,
)
from tests.helpers.upstream_answers import openai_text_chunks

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(codex_binary() is None, reason="Codex CLI not installed under .cache"),
]

# Names Codex's catalog knows, each served here by another kind.
CLAUDE, OPENAI, GEMINI = "gpt-5.4", "gpt-5.4-mini", "gpt-5.2"
REPLACED = {CLAUDE: TOOLU_ID, OPENAI: CALL_ID, GEMINI: '"functionCall"'}
"""What marks the replaced call in an upstream request (Gemini's calls have no id: its call
part)."""
PROVIDER_KEY, GEMINI_KEY = "sk-codex-compaction-upstream", "AIza-codex-compaction"
COMPACT_LIMIT = 20000
OVER_LIMIT = {"input_tokens": 60000, "output_tokens": 20}
SUMMARY = "SUMMARY-7f3a: the user asked for out.txt; the shell wrote it. Next: answer."
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


class CompactingOpenAI(MockUpstream):
    """The same script from an openai-kind upstream (Chat Completions)."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if (refusal := refused(exchange, OPENAI_PATH, PROVIDER_KEY)) is not None:
            return refusal
        text = json.dumps(exchange.body)
        if ASKED[:40] in text:
            return Reply(json=openai_whole(SUMMARY))
        if SUMMARY in text:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER)))
        call = {"index": 0, "id": CALL_ID, "type": "function"}
        call["function"] = {"name": "exec_command", "arguments": json.dumps({"cmd": COMMAND})}
        chunks = openai_text_chunks()
        chunks.insert(1, chunks[1] | {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        usage = {"prompt_tokens": 60000, "completion_tokens": 20, "total_tokens": 60020}
        chunks.append(chunks[0] | {"choices": [], "usage": usage})
        return Reply(frames=openai_frames(chunks))


def openai_whole(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {
        "id": "chatcmpl-summary",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
    }


class CompactingGemini(MockGemini):
    """The same script from Gemini (requests screened as Gemini screens them)."""

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        text = json.dumps(exchange.body)
        if ASKED[:40] in text:
            return Reply(json=gemini_answer([{"text": SUMMARY}]))
        if SUMMARY in text:
            return Reply(frames=[Frame(gemini_answer([{"text": ANSWER}]))])
        call = {"name": "exec_command", "args": {"cmd": COMMAND}}
        usage = {"promptTokenCount": 60000, "candidatesTokenCount": 20, "totalTokenCount": 60020}
        answer = gemini_answer([{"functionCall": call, "thoughtSignature": SIGNATURE}], usage=usage)
        reply = Reply(frames=[Frame(answer)])
        self.issued.update(issued_signatures(reply))
        return reply


Upstreams = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with (
        CompactingClaude(ANTHROPIC_KEY) as claude,
        CompactingOpenAI() as oa,
        CompactingGemini(GEMINI_KEY) as gemini,
    ):
        yield {CLAUDE: claude, OPENAI: oa, GEMINI: gemini}


@pytest.fixture(scope="module")
def proxy(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    url = {model: upstream.base_url for model, upstream in upstreams.items()}
    config = f"""
server: {{api_keys: ["{CODEX_KEY}"]}}
router: {{retries: 0}}
providers:
  an: {{kind: anthropic, base_url: "{url[CLAUDE]}", api_key: {ANTHROPIC_KEY}}}
  oa: {{kind: openai, base_url: "{url[OPENAI]}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{url[GEMINI]}", api_key: {GEMINI_KEY}}}
models:
  - {{name: {CLAUDE}, provider: an, model: claude-sonnet-4-5, max_tokens: 4096}}
  - {{name: {OPENAI}, provider: oa, model: gpt-4o-mini}}
  - {{name: {GEMINI}, provider: gm, model: gemini-2.5-flash}}
"""
    with run_proxy(config, tmp_path_factory.mktemp("codex-compaction")) as running:
        yield running


@pytest.mark.parametrize("model", [CLAUDE, OPENAI, GEMINI], ids=["anthropic", "openai", "gemini"])
def test_codex_compacts_through_toolrelay(
    proxy: RunningProxy, upstreams: Upstreams, model: str, tmp_path: Path
) -> None:
    upstream = upstreams[model]
    upstream.reset()
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = run_codex(
        "write codex-ok to out.txt",
        base_url=proxy.base_url,
        model=model,
        workdir=workdir,
        api_key=CODEX_KEY,
        compact_limit=COMPACT_LIMIT,
        timeout=180,
    )
    log = proxy.log.read_text(errors="replace")
    assert result.returncode == 0, f"{result.stderr[-3000:]}\n{log[-3000:]}"
    assert ANSWER in result.stdout
    assert (workdir / "out.txt").read_text().strip() == "codex-ok"
    bodies: list[dict[str, Any]] = [exchange.body for exchange in upstream.exchanges]
    asked = [i for i, body in enumerate(bodies) if ASKED[:40] in json.dumps(body)]
    assert len(asked) == 1, [json.dumps(body)[:300] for body in bodies]
    summary_request = json.dumps(bodies[asked[0]])
    assert COMMAND in summary_request  # the conversation to summarise, call and all
    assert "codex-ok" in summary_request
    after = [json.dumps(body) for body in bodies[asked[0] + 1 :]]
    assert after, "Codex did not go on after compaction"
    assert all(SUMMARY in body for body in after)
    assert not any(REPLACED[model] in body for body in after)  # the replaced call and its output
    assert not any(COMMAND in body for body in after)
    assert "path=/v1/responses/compact" not in log  # v2: the trigger on /v1/responses
    assert "path=/v1/responses " in log
