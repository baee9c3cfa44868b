"""Claude Code's own CLI (`claude -p ... --output-format stream-json`, installed from npm by
.ci/run) with ANTHROPIC_BASE_URL at a real proxy process, on an openai-kind, a gemini-kind and
Claude on Bedrock and on Vertex AI (the setups many companies mandate: SigV4-signed, every
signature and Converse body checked by the Bedrock double; on Vertex, Claude Code's request
relayed as it sent it with a token from the token endpoint double), in front of local mock
upstreams that answer like a model would: the first agent turn asks to `Read` a file, the
turn after the tool result answers with what the file says. The answers stream; Claude Code
must run the tool and finish with that answer."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.conftest import (
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    REPO,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_anthropic import message_events
from tests.helpers.mock_bedrock import AWS_ENVIRONMENT, MockBedrock, converse_stream
from tests.helpers.mock_gemini import MockGemini, gemini_answer, gemini_path, issued_signatures
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
from tests.helpers.mock_vertex import MockVertex
from tests.helpers.prompt_cache_double import ExplicitCache
from tests.helpers.upstream_answers import openai_text_chunks

pytestmark = pytest.mark.e2e

CLAUDE_CODE = REPO / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
FILE_TEXT = "the launch code is 4417"
ANSWER_PREFIX = "The file says: "
SIGNATURE = "Q2xhdWRlIENvZGUgb24gR2VtaW5p"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
BILLING = b"x-anthropic-billing-header"


def claude_code_binary() -> Path:
    binary = Path(os.environ.get("CLAUDE_CODE_BIN", CLAUDE_CODE))
    if not binary.exists():
        pytest.fail(
            f"Claude Code is not installed at {binary}: `bash .ci/run` installs it "
            "(npm install --prefix .cache/claude-code @anthropic-ai/claude-code)"
        )
    return binary


def tool_output(messages: list[dict[str, Any]]) -> str | None:
    """What the Read tool returned, once the conversation has a tool result."""
    for message in messages:
        if message.get("role") == "tool":
            return str(message["content"])
        for part in message.get("parts") or ():
            if "functionResponse" in part:
                return json.dumps(part["functionResponse"]["response"])
    return None


def offers_read(body: dict[str, Any]) -> bool:
    return "Read" in json.dumps(body.get("tools") or [])


class ScriptedOpenAI(MockUpstream):
    """Answers by what it is asked: Read the file, then say what it held; a request without
    tools (Claude Code's session title) gets a title."""

    def __init__(self, path: Path) -> None:
        super().__init__(screen=self._reply)
        self.path = path

    def _reply(self, exchange: Exchange) -> Reply | None:
        if (refusal := refused(exchange, OPENAI_PATH, PROVIDER_KEY)) is not None:
            return refusal
        body = exchange.body
        output = tool_output(body["messages"])
        if output is not None:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER_PREFIX, output)))
        if not offers_read(body):
            return Reply(frames=openai_frames(openai_text_chunks('{"title": "Read a file"}')))
        arguments = json.dumps({"file_path": str(self.path)})
        call = {"index": 0, "id": "call_read_1", "type": "function"}
        call["function"] = {"name": "Read", "arguments": arguments}
        chunks = openai_text_chunks()
        chunks.insert(1, chunks[1] | {"choices": [tool_delta(call)]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(frames=openai_frames(chunks))


def tool_delta(call: dict[str, Any]) -> dict[str, Any]:
    return {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}


class ScriptedGemini(MockGemini):
    """The same script as Gemini streams it, screened as Gemini screens requests (its own
    signatures must come back)."""

    def __init__(self, path: Path) -> None:
        super().__init__(GEMINI_KEY)
        self.path = path

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        body = exchange.body
        output = tool_output(body["contents"])
        if output is not None:
            parts = [{"text": ANSWER_PREFIX + output}]
        elif not any("functionDeclarations" in tool for tool in body.get("tools") or []):
            parts = [{"text": '{"title": "Read a file"}'}]
        else:
            call = {"name": "Read", "args": {"file_path": str(self.path)}}
            parts = [{"functionCall": call, "thoughtSignature": SIGNATURE}]
        reply = Reply(frames=[Frame(gemini_answer(parts))])
        self.issued.update(issued_signatures(reply))
        return reply


def check_bedrock_cache(bodies: list[dict[str, Any]]) -> None:
    """Claude Code's own breakpoints reach Bedrock as cachePoints (CONTRACT.md, "Prompt
    caching"), its billing line does not, and a Bedrock-shaped cache reads the second agent
    turn's prefix from the first."""
    cache = ExplicitCache("bedrock")
    for body in bodies:
        assert 1 <= orjson.dumps(body).count(b'"cachePoint"') <= 4
        assert BILLING not in orjson.dumps(body.get("system"))
        cache.serve(body)
    assert cache.counters.usages[1].read > cache.counters.usages[1].total // 2


class ScriptedBedrock(MockBedrock):
    """The same script as a ConverseStream, for what no test queued; the double still checks
    every signature and body first."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        answered = super()._screen_request(exchange)
        if answered is not None:
            return answered
        body = exchange.body
        last = body["messages"][-1]["content"]
        results = [block["toolResult"] for block in last if "toolResult" in block]
        if results:
            output = "".join(part.get("text", "") for part in results[0]["content"])
            return converse_stream(ANSWER_PREFIX + output)
        if not offers_read(body.get("toolConfig") or {}):
            return converse_stream('{"title": "Read a file"}')
        return converse_stream("", [("tooluse_read_1", "Read", {"file_path": str(self.path)})])


class ScriptedVertexClaude(MockVertex):
    """The same script as Claude on Vertex streams it (Anthropic's events), for Claude Code's
    requests relayed as it sent them; the double checks the token and the body first."""

    def __init__(self, path: Path, tokens: GoogleTokenServer) -> None:
        super().__init__(lambda token: token in tokens.issued)
        self.path = path

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        body = exchange.body
        last = body["messages"][-1]["content"]
        results = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            output = results[0]["content"]
            text = output if isinstance(output, str) else "".join(p["text"] for p in output)
            answer = anthropic_message([{"type": "text", "text": ANSWER_PREFIX + text}], "end_turn")
        elif not offers_read(body):
            title = {"type": "text", "text": '{"title": "Read a file"}'}
            answer = anthropic_message([title], "end_turn")
        else:
            use = {"type": "tool_use", "id": "toolu_read_1", "name": "Read"}
            answer = anthropic_message(
                [{**use, "input": {"file_path": str(self.path)}}], "tool_use"
            )
        return Reply(frames=anthropic_frames(message_events(answer)))


Upstreams = tuple[ScriptedOpenAI, ScriptedGemini, ScriptedBedrock, ScriptedVertexClaude]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("claude-code-workspace")
    (directory / "notes.txt").write_text(FILE_TEXT + "\n")
    return directory


@pytest.fixture(scope="module")
def tokens() -> Iterator[GoogleTokenServer]:
    with GoogleTokenServer(ServiceAccount.generate()) as server:
        yield server


@pytest.fixture(scope="module")
def upstreams(workspace: Path, tokens: GoogleTokenServer) -> Iterator[Upstreams]:
    path = workspace / "notes.txt"
    with (
        ScriptedOpenAI(path) as oa,
        ScriptedGemini(path) as gemini,
        ScriptedBedrock(path) as aws,
        ScriptedVertexClaude(path, tokens) as gcp,
    ):
        yield oa, gemini, aws, gcp


@pytest.fixture(scope="module")
def proxy(
    upstreams: Upstreams, tokens: GoogleTokenServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    oa, gemini, aws, gcp = upstreams
    directory = tmp_path_factory.mktemp("claude-code-proxy")
    key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini.base_url}", api_key: {GEMINI_KEY}}}
  aws: {{kind: bedrock, region: us-east-1, base_url: "{aws.base_url}"}}
  gcp: {{kind: vertex, project: test-project, region: us-east5, base_url: "{gcp.base_url}",
        credentials: "{key_file}"}}""",
        f"""  - {{name: gpt-4o-mini, provider: oa, model: gpt-4o-mini, max_output_tokens: 16384}}
  - {{name: gemini-2.5-flash, provider: gm, model: gemini-2.5-flash}}
  - {{name: claude-bedrock, provider: aws, model: "{BEDROCK_MODEL}", max_output_tokens: 16384}}
  - {{name: claude-vertex, provider: gcp, model: "{VERTEX_MODEL}", max_tokens: 16384}}""",
    )
    with run_proxy(config, directory, env=AWS_ENVIRONMENT) as running:
        yield running


def run_claude_code(proxy: RunningProxy, workspace: Path, model: str) -> list[dict[str, Any]]:
    home = workspace / f"home-{model}"
    home.mkdir(exist_ok=True)
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{proxy.port}",
        "ANTHROPIC_API_KEY": CLIENT_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = [str(claude_code_binary()), "-p", "What does notes.txt say? Read it."]
    command += ["--output-format", "stream-json", "--verbose", "--model", model]
    finished = subprocess.run(
        command,
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    return [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini", "gemini-2.5-flash", "claude-bedrock", "claude-vertex"]
)
def test_claude_code_completes_a_read_tool_loop(
    proxy: RunningProxy, workspace: Path, upstreams: Upstreams, model: str
) -> None:
    for upstream in upstreams:
        upstream.reset()
    lines = run_claude_code(proxy, workspace, model)

    result = lines[-1]
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert result["result"].startswith(ANSWER_PREFIX)
    assert FILE_TEXT in result["result"]
    assert result["num_turns"] == 2
    tool_uses = [
        block
        for line in lines
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    ]
    assert [(block["name"], block["input"]) for block in tool_uses] == [
        ("Read", {"file_path": str(workspace / "notes.txt")})
    ]
    if model == "claude-vertex":  # relayed as Claude Code sent it, to rawPredict
        relayed = [e for e in upstreams[3].exchanges if offers_read(e.body)]
        assert len(relayed) >= 2
        assert all(e.path.endswith(f"/{VERTEX_MODEL}:streamRawPredict") for e in relayed)
        assert all("model" not in e.body for e in relayed)
        assert not any(BILLING in orjson.dumps(e.body) for e in relayed)  # Anthropic's own
        return
    if model == "claude-bedrock":
        aws = upstreams[2]
        agent_turns = [c for c in aws.calls if offers_read(c.exchange.body.get("toolConfig") or {})]
        assert len(agent_turns) >= 2
        assert {(c.operation, c.auth, c.model_id) for c in aws.calls} == {
            ("converse-stream", "sigv4", BEDROCK_MODEL)
        }
        check_bedrock_cache([c.exchange.body for c in agent_turns])
        return
    upstream = upstreams[0] if model.startswith("gpt") else upstreams[1]
    agent_bodies = [e.body for e in upstream.exchanges if offers_read(e.body)]
    assert len(agent_bodies) >= 2
    if model.startswith("gpt"):
        assert all(body["stream"] is True for body in agent_bodies)
    else:
        assert all(e.path == gemini_path(model, stream=True) for e in upstream.exchanges)
