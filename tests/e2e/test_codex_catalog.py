"""Codex 0.169 (`codex exec`, the pinned binary) on a ToolRelay model named as Codex's catalog
names it (`gpt-5.6-sol`, `gpt-5.6-terra`), through a custom provider (issue 38). For those
models Codex sends no `tools`: its tools come in an `additional_tools` input item (namespace
`functions` with its custom `exec` JavaScript tool, namespace `collaboration`;
tests/recordings/codex/catalog_first_turn.json). The upstream doubles (openai and anthropic
kinds) call `functions__exec` as offered, with JavaScript that runs Codex's shell tool; Codex
must run it and finish the turn (exit 0) with the model's answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    PROVIDER_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers.codex_cli import CODEX_VERSION, codex_binary, run_shell_task
from tests.helpers.codex_upstreams import ANSWER, tool_result
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_upstream import (
    OPENAI_PATH,
    Exchange,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
    refused,
)
from tests.helpers.upstream_answers import openai_text_chunks

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        codex_binary() is None,
        reason=f"Codex {CODEX_VERSION} is not installed under .cache/codex (bash .ci/run does)",
    ),
]

SOL, TERRA = "gpt-5.6-sol", "gpt-5.6-terra"
EXEC = "functions__exec"
SCRIPT = 'const r = await tools.exec_command({cmd: "echo catalog-ok > out.txt"});\ntext(r);'


class ScriptedOpenAI(MockUpstream):
    """Calls `functions__exec` with SCRIPT, then (given its result) says ANSWER."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if (refusal := refused(exchange, OPENAI_PATH, PROVIDER_KEY)) is not None:
            return refusal
        if tool_result(exchange.body["messages"]) is not None:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER)))
        call = {"index": 0, "id": "call_exec_1", "type": "function"}
        call["function"] = {"name": EXEC, "arguments": json.dumps({"input": SCRIPT})}
        chunks = openai_text_chunks()
        delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
        chunks.insert(1, chunks[1] | {"choices": [delta]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(frames=openai_frames(chunks))


class ScriptedAnthropic(MockAnthropic):
    """The same script as the Messages API streams it, screened as it screens requests."""

    def _screen(self, exchange: Exchange) -> Reply | None:
        refused = super()._screen(exchange)
        if refused is not None:
            return refused
        if tool_result(exchange.body["messages"]) is not None:
            answer = anthropic_message([{"type": "text", "text": ANSWER}], "end_turn")
        else:
            use = {"type": "tool_use", "id": "toolu_exec_1", "name": EXEC}
            answer = anthropic_message([use | {"input": {"input": SCRIPT}}], "tool_use")
        return Reply(frames=anthropic_frames(message_events(answer)))


@pytest.fixture(scope="module")
def upstreams() -> Iterator[dict[str, MockUpstream]]:
    with ScriptedOpenAI() as oa, ScriptedAnthropic(ANTHROPIC_KEY) as claude:
        yield {SOL: oa, TERRA: claude}


@pytest.fixture(scope="module")
def proxy(
    upstreams: dict[str, MockUpstream], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    oa, an = upstreams[SOL].base_url, upstreams[TERRA].base_url
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa}/v1", api_key: {PROVIDER_KEY}}}
  an: {{kind: anthropic, base_url: "{an}", api_key: {ANTHROPIC_KEY}}}""",
        f"""  - {{name: {SOL}, provider: oa, model: gpt-5}}
  - {{name: {TERRA}, provider: an, model: claude-sonnet-4-5, max_tokens: 4096}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("codex-catalog")) as running:
        yield running


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {tool.get("name") or tool["function"]["name"] for tool in body.get("tools", [])}


@pytest.mark.parametrize("model", [SOL, TERRA])
def test_codex_catalog_model_completes_a_tool_turn(
    proxy: RunningProxy, upstreams: dict[str, MockUpstream], tmp_path: Path, model: str
) -> None:
    upstreams[model].reset()
    finished, report, workdir = run_shell_task(
        "catalog-ok",
        base_url=proxy.base_url,
        model=model,
        tmp_path=tmp_path,
        proxy_log=proxy.log,
        api_key=CLIENT_KEY,
    )
    assert finished.returncode == 0, report
    assert (workdir / "out.txt").read_text().strip() == "catalog-ok", report
    assert ANSWER in finished.stdout, report
    first, second = [exchange.body for exchange in upstreams[model].exchanges]
    assert {EXEC, "collaboration__spawn_agent"} <= _tool_names(first)
    assert _tool_names(second) == _tool_names(first)
    assert tool_result(second["messages"]) is not None
