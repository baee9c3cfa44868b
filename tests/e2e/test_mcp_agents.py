"""The MCP clients of real coding agents against ToolRelay's `/mcp`: OpenAI's Codex CLI
(pinned 0.169.0, `[mcp_servers.toolrelay]` with `url` and `bearer_token_env_var`) and Claude
Code's CLI (`--mcp-config` naming /mcp as an `http` server with the Authorization header), each
with its model through the same proxy process (/v1/responses, /v1/messages) on a scripted
openai-kind upstream. The model calls the MCP tool under the name the agent offered it (the
agent's own prefix before ToolRelay's `calc__add`), the agent runs it through /mcp on the
configured MCP server (a real one, tests/helpers/mcp_servers.py), and the model answers with
the result. The agents must really make the call and finish with the sum."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import PROVIDER_KEY, REPO, RunningProxy, run_proxy
from tests.helpers.codex_cli import codex_binary, codex_home
from tests.helpers.mcp_servers import http_app, serve
from tests.helpers.mock_upstream import (
    OPENAI_PATH,
    Exchange,
    MockUpstream,
    Reply,
    openai_frames,
    refused,
)
from tests.helpers.upstream_answers import openai_text_chunks

pytestmark = pytest.mark.e2e

CODEX_KEY = "codex-key-SECRET-601"
CLAUDE_KEY = "claude-key-SECRET-602"
TOOL = "calc__add"
"""ToolRelay's name for the `add` tool of the server configured as `calc`."""
ARGUMENTS = {"a": 2, "b": 3}
ANSWER_PREFIX = "The sum is "
STRUCTURED = '{"result":5}'
"""add's structuredContent, which both agents hand the model (over the text content "5")."""
CLAUDE_CODE = REPO / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
KEY_ENV = "TOOLRELAY_API_KEY"


def offered_names(body: dict[str, Any]) -> list[str]:
    """The function names a Chat Completions request offers."""
    return [tool["function"]["name"] for tool in body.get("tools") or [] if "function" in tool]


def tool_message(messages: list[dict[str, Any]]) -> str | None:
    """The content of the conversation's tool result, once it has one (as text)."""
    for message in messages:
        if message.get("role") == "tool":
            content = message["content"]
            return content if isinstance(content, str) else json.dumps(content)
    return None


class ScriptedCalc(MockUpstream):
    """A model that, offered a tool ending in `calc__add`, calls it with 2 and 3 under the name
    it was offered, then answers with what the tool gave; a request offering no such tool (an
    agent's session title) gets a title."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if (refusal := refused(exchange, OPENAI_PATH, PROVIDER_KEY)) is not None:
            return refusal
        output = tool_message(exchange.body["messages"])
        if output is not None:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER_PREFIX, output)))
        names = [name for name in offered_names(exchange.body) if name.endswith(TOOL)]
        if not names:
            return Reply(frames=openai_frames(openai_text_chunks('{"title": "Add numbers"}')))
        call = {"index": 0, "id": "call_mcp_add_1", "type": "function"}
        call["function"] = {"name": names[0], "arguments": json.dumps(ARGUMENTS)}
        chunks = openai_text_chunks()
        delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
        chunks.insert(1, chunks[1] | {"choices": [delta]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(frames=openai_frames(chunks))

    def calls(self) -> list[tuple[str, str | None]]:
        """(the name the agent offered for calc__add, the tool result the model got after)."""
        found = []
        for exchange in self.exchanges:
            names = [name for name in offered_names(exchange.body) if name.endswith(TOOL)]
            if names:
                found.append((names[0], tool_message(exchange.body["messages"])))
        return found


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedCalc]:
    with ScriptedCalc() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def proxy(
    upstream: ScriptedCalc, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    with serve(http_app("stateless")) as calc_url:
        config = f"""
server:
  log: {{format: json}}
  keys:
    - {{name: codex, key: "{CODEX_KEY}"}}
    - {{name: claude, key: "{CLAUDE_KEY}"}}
router:
  retries: 0
providers:
  oa: {{kind: openai, base_url: "{upstream.base_url}/v1", api_key: {PROVIDER_KEY}}}
models:
  - {{name: gpt-4o-mini, provider: oa, model: gpt-4o-mini, max_output_tokens: 16384}}
mcp:
  servers:
    calc: {{url: "{calc_url}", allowed_tools: [add, echo]}}
"""
        with run_proxy(config, tmp_path_factory.mktemp("mcp-agents")) as running:
            yield running


def mcp_calls(proxy: RunningProxy, key: str) -> list[dict[str, Any]]:
    """The proxy's `mcp_call` log lines for calls made with the key named `key`."""
    lines = []
    for text in proxy.log.read_text().splitlines():
        if text.startswith("{") and '"event":"mcp_call"' in text:
            line = json.loads(text)
            if line["key"] == key:
                lines.append(line)
    return lines


def calls_counted(proxy: RunningProxy, key: str) -> str | None:
    """The value of toolrelay_mcp_calls_total for a successful calc add with `key`."""
    metrics = httpx.get(f"http://127.0.0.1:{proxy.port}/metrics").text
    series = f'toolrelay_mcp_calls_total{{key="{key}",outcome="ok",server="calc",tool="add"}} '
    for line in metrics.splitlines():
        if line.startswith(series):
            return line.removeprefix(series)
    return None


def assert_called_through_mcp(proxy: RunningProxy, upstream: ScriptedCalc, key: str) -> str:
    """The proxy ran calc's `add` once for `key`, and the model got 5 back; the name the agent
    offered the tool under is returned."""
    lines = mcp_calls(proxy, key)
    assert [(line["server"], line["tool"], line["outcome"]) for line in lines] == [
        ("calc", "add", "ok")
    ]
    assert calls_counted(proxy, key) == "1.0"
    calls = upstream.calls()
    assert len(calls) == 2, calls
    (name, before), (again, after) = calls
    assert (before, again) == (None, name)
    assert after is not None
    assert STRUCTURED in after
    return name


def test_codex_calls_the_tool_through_mcp(
    proxy: RunningProxy, upstream: ScriptedCalc, tmp_path: Path
) -> None:
    if codex_binary() is None:
        pytest.skip("Codex is not installed under .cache/codex (bash .ci/run installs it)")
    upstream.reset()
    base_url = f"http://127.0.0.1:{proxy.port}"
    env = codex_home(tmp_path / "home", f"{base_url}/v1", "gpt-4o-mini", api_key=CODEX_KEY)
    with (tmp_path / "home" / "config.toml").open("a", encoding="utf-8") as config:
        config.write(
            f'\n[mcp_servers.toolrelay]\nurl = "{base_url}/mcp"\n'
            f'bearer_token_env_var = "{KEY_ENV}"\n'
        )
    env[KEY_ENV] = CODEX_KEY
    workdir = tmp_path / "work"
    workdir.mkdir()
    command = [str(codex_binary()), "exec", "--skip-git-repo-check"]
    command += ["--dangerously-bypass-approvals-and-sandbox", "Add 2 and 3 with the calc tool."]
    finished = subprocess.run(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-3000:]
    assert finished.stdout.strip().startswith(ANSWER_PREFIX)
    assert STRUCTURED in finished.stdout
    name = assert_called_through_mcp(proxy, upstream, "codex")
    assert name == f"mcp__toolrelay__{TOOL}"


def run_claude_code(proxy: RunningProxy, home: Path, tool_name: str) -> list[dict[str, Any]]:
    """`claude -p` with its model and its one MCP server both at the proxy, the MCP tool
    allowed without asking; its stream-json lines."""
    home.mkdir()
    base_url = f"http://127.0.0.1:{proxy.port}"
    servers = {
        "toolrelay": {
            "type": "http",
            "url": f"{base_url}/mcp",
            "headers": {"Authorization": f"Bearer {CLAUDE_KEY}"},
        }
    }
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = [str(CLAUDE_CODE), "-p", "Add 2 and 3 with the calc tool."]
    command += ["--output-format", "stream-json", "--verbose", "--model", "gpt-4o-mini"]
    command += ["--mcp-config", str(home / "mcp.json"), "--strict-mcp-config"]
    command += ["--allowedTools", tool_name]
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


def test_claude_code_calls_the_tool_through_mcp(
    proxy: RunningProxy, upstream: ScriptedCalc, tmp_path: Path
) -> None:
    if not CLAUDE_CODE.exists():
        pytest.skip("Claude Code is not installed under .cache/claude-code (bash .ci/run)")
    upstream.reset()
    tool_name = f"mcp__toolrelay__{TOOL}"
    lines = run_claude_code(proxy, tmp_path / "home", tool_name)
    init = lines[0]
    assert {"name": "toolrelay", "status": "connected"} in init["mcp_servers"]
    listed = [name for name in init["tools"] if name.startswith("mcp__")]
    assert listed == [tool_name, "mcp__toolrelay__calc__echo"]
    result = lines[-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert result["result"] == ANSWER_PREFIX + STRUCTURED
    tool_uses = [
        (block["name"], block["input"])
        for line in lines
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert tool_uses == [(tool_name, ARGUMENTS)]
    assert assert_called_through_mcp(proxy, upstream, "claude") == tool_name
