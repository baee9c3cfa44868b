"""OpenAI's Codex CLI (`codex exec`, pinned 0.169.0, installed from npm by .ci/run) with its
`wire_api = "responses"` provider at a real proxy process's /v1, in front of local validating
doubles of every kind's upstream (tests/helpers/codex_upstreams.py): openai, gemini, anthropic,
Claude on Bedrock (SigV4 from the proxy's AWS environment, every signature and Converse body
checked by the double), Gemini and Claude on Vertex AI (a token from the token endpoint
double, for the proxy's service account). Each answers like a model would: the first agent
turn calls the shell tool `exec_command`, the turn after the tool result answers "done".
Codex must really run the command and finish with that answer.

Also Codex's recorded requests (tests/recordings/codex/, see SOURCE.md there) replayed as they
came through the proxy to each of those upstreams: what each upstream gets in its own shape
(the tool result for the call's id, the tool names, the streaming route), and the Responses
events Codex needs back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    REPO,
    RunningProxy,
    keyed_config,
    run_proxy,
)
from tests.helpers import mock_bedrock, mock_vertex
from tests.helpers.codex_cli import CODEX_VERSION, codex_binary, run_shell_task
from tests.helpers.codex_upstreams import (
    ANSWER,
    CALL_ID,
    COMMAND,
    SIGNATURE,
    TOOLU_ID,
    TOOLUSE_ID,
    ScriptedAnthropic,
    ScriptedBedrock,
    ScriptedGemini,
    ScriptedOpenAI,
    ScriptedVertex,
    tool_result,
)
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_gemini import gemini_path
from tests.helpers.mock_upstream import ANTHROPIC_PATH, OPENAI_PATH, Exchange, MockUpstream

pytestmark = pytest.mark.e2e

RECORDINGS = REPO / "tests" / "recordings" / "codex"
DEVELOPER_START = "You are a coding agent running in the Codex CLI"
OPENAI_MODEL = "gpt-4o-mini"
GEMINI_MODEL = "gemini-2.5-flash"
CLAUDE_MODEL = "claude-sonnet-4-5"
BEDROCK_MODEL = "claude-bedrock"
VERTEX_GEMINI = "gemini-vertex"
VERTEX_CLAUDE = "claude-vertex"
BEDROCK_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_CLAUDE_ID = "claude-sonnet-4-5@20250929"
PROJECT, REGION = "test-project", "us-east5"
MODELS = [OPENAI_MODEL, GEMINI_MODEL, CLAUDE_MODEL, BEDROCK_MODEL, VERTEX_GEMINI, VERTEX_CLAUDE]
PATHS = {
    OPENAI_MODEL: OPENAI_PATH,
    GEMINI_MODEL: gemini_path(GEMINI_MODEL, stream=True),
    CLAUDE_MODEL: ANTHROPIC_PATH,
    BEDROCK_MODEL: mock_bedrock.model_path(BEDROCK_ID, stream=True),
    VERTEX_GEMINI: mock_vertex.model_path(
        PROJECT, REGION, "google", GEMINI_MODEL, "streamGenerateContent"
    ),
    VERTEX_CLAUDE: mock_vertex.model_path(
        PROJECT, REGION, "anthropic", VERTEX_CLAUDE_ID, "streamRawPredict"
    ),
}
"""Where each model's requests must go: its kind's streaming route."""
CODEX_CALL_IDS = {OPENAI_MODEL: CALL_ID, CLAUDE_MODEL: TOOLU_ID, VERTEX_CLAUDE: TOOLU_ID}
CODEX_CALL_IDS[BEDROCK_MODEL] = TOOLUSE_ID
"""The id each upstream gave its call, which must come back with the result (Gemini's calls
have none: the result goes back by name)."""

Upstreams = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def tokens() -> Iterator[GoogleTokenServer]:
    with GoogleTokenServer(ServiceAccount.generate()) as server:
        yield server


@pytest.fixture(scope="module")
def upstreams(tokens: GoogleTokenServer) -> Iterator[Upstreams]:
    """Each model's double (one Vertex AI double for both Vertex models)."""
    with (
        ScriptedOpenAI(PROVIDER_KEY) as oa,
        ScriptedGemini(GEMINI_KEY) as gemini,
        ScriptedAnthropic(ANTHROPIC_KEY) as claude,
        ScriptedBedrock() as aws,
        ScriptedVertex(tokens) as gcp,
    ):
        yield {
            OPENAI_MODEL: oa,
            GEMINI_MODEL: gemini,
            CLAUDE_MODEL: claude,
            BEDROCK_MODEL: aws,
            VERTEX_GEMINI: gcp,
            VERTEX_CLAUDE: gcp,
        }


@pytest.fixture(scope="module")
def proxy(
    upstreams: Upstreams, tokens: GoogleTokenServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    url = {model: upstream.base_url for model, upstream in upstreams.items()}
    directory = tmp_path_factory.mktemp("codex-proxy")
    key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{url[OPENAI_MODEL]}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{url[GEMINI_MODEL]}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{url[CLAUDE_MODEL]}", api_key: {ANTHROPIC_KEY}}}
  aws: {{kind: bedrock, region: us-east-1, base_url: "{url[BEDROCK_MODEL]}"}}
  gcp: {{kind: vertex, project: {PROJECT}, region: {REGION}, base_url: "{url[VERTEX_CLAUDE]}",
        credentials: "{key_file}"}}""",
        f"""  - {{name: {OPENAI_MODEL}, provider: oa, model: {OPENAI_MODEL}}}
  - {{name: {GEMINI_MODEL}, provider: gm, model: {GEMINI_MODEL}}}
  - {{name: {CLAUDE_MODEL}, provider: an, model: {CLAUDE_MODEL}, max_tokens: 4096}}
  - {{name: {BEDROCK_MODEL}, provider: aws, model: "{BEDROCK_ID}", max_tokens: 4096}}
  - {{name: {VERTEX_GEMINI}, provider: gcp, model: {GEMINI_MODEL}}}
  - {{name: {VERTEX_CLAUDE}, provider: gcp, model: "{VERTEX_CLAUDE_ID}", max_tokens: 4096}}""",
    )
    with run_proxy(config, directory, env=mock_bedrock.AWS_ENVIRONMENT) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstreams: Upstreams) -> None:
    for upstream in upstreams.values():
        upstream.reset()


def upstream_bodies(upstreams: Upstreams, model: str) -> list[dict[str, Any]]:
    """The bodies `model`'s upstream got, each checked to have come by its kind's streaming
    route (signed with SigV4 for Bedrock; without `model` and with Vertex's version for
    Claude on Vertex)."""
    exchanges: list[Exchange] = upstreams[model].exchanges
    assert [exchange.path for exchange in exchanges] == [PATHS[model]] * len(exchanges)
    bodies = [exchange.body for exchange in exchanges]
    assert all(body.get("stream", True) is True for body in bodies)  # the rest stream by path
    if model == BEDROCK_MODEL:
        aws = upstreams[model]
        assert isinstance(aws, ScriptedBedrock)
        assert {(c.operation, c.auth, c.model_id) for c in aws.calls} == {
            ("converse-stream", "sigv4", BEDROCK_ID)
        }
    if model == VERTEX_CLAUDE:
        assert all("model" not in body for body in bodies)
        assert {body["anthropic_version"] for body in bodies} == {"vertex-2023-10-16"}
    return bodies


def system_text(body: dict[str, Any]) -> str:
    """The upstream request's system instructions, whatever the kind."""
    if "systemInstruction" in body:
        return "".join(part.get("text", "") for part in body["systemInstruction"]["parts"])
    if "system" in body:
        system = body["system"]
        if isinstance(system, str):
            return system
        return "".join(block.get("text", "") for block in system)
    return "".join(
        message["content"] if isinstance(message["content"], str) else json.dumps(message)
        for message in body["messages"]
        if message.get("role") in ("system", "developer")
    )


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or body.get("contents") or [])


def tool_names(body: dict[str, Any]) -> list[str]:
    """The tools' names as the upstream got them, in its kind's shape."""
    names = []
    tools = body.get("tools") or (body.get("toolConfig") or {}).get("tools") or []
    for tool in tools:
        if "function" in tool:
            names.append(tool["function"]["name"])
        elif "functionDeclarations" in tool:
            names += [declaration["name"] for declaration in tool["functionDeclarations"]]
        elif "toolSpec" in tool:
            names.append(tool["toolSpec"]["name"])
        elif "cachePoint" not in tool:  # Bedrock's cache point is no tool
            names.append(tool["name"])
    return names


def blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every content block or part of the conversation (Anthropic, Converse, Gemini)."""
    contents = [message.get("parts") or message.get("content") for message in conversation(body)]
    lists = [content for content in contents if isinstance(content, list)]
    return [block for content in lists for block in content if isinstance(block, dict)]


def block_call(block: dict[str, Any]) -> tuple[Any, str] | None:
    """A block's tool call as (id, name): Anthropic's tool_use, Converse's toolUse, Gemini's
    functionCall (which has no id: its name stands for it)."""
    if block.get("type") == "tool_use":
        return block["id"], block["name"]
    if "toolUse" in block:
        return block["toolUse"]["toolUseId"], block["toolUse"]["name"]
    if "functionCall" in block:
        return block["functionCall"]["name"], block["functionCall"]["name"]
    return None


def block_result(block: dict[str, Any]) -> Any:
    """The id of the call a block answers: tool_result, toolResult, functionResponse (by name)."""
    if block.get("type") == "tool_result":
        return block["tool_use_id"]
    if "toolResult" in block:
        return block["toolResult"]["toolUseId"]
    if "functionResponse" in block:
        return block["functionResponse"]["name"]
    return None


def calls_and_results(body: dict[str, Any]) -> tuple[list[tuple[Any, str]], list[Any]]:
    """The history's tool calls as (id, name) and its results' call ids, read in the upstream's
    own shape, so each kind is seen to pair the result with the call it answers."""
    messages = conversation(body)
    calls = [(c["id"], c["function"]["name"]) for m in messages for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in messages if m.get("role") == "tool"]
    found = blocks(body)
    calls += [call for call in map(block_call, found) if call is not None]
    results += [result for result in map(block_result, found) if result is not None]
    return calls, results


# --- Codex itself -----------------------------------------------------------------------------


@pytest.mark.skipif(
    codex_binary() is None,
    reason=f"Codex {CODEX_VERSION} is not installed under .cache/codex: `bash .ci/run` "
    f"installs it (npm install --prefix .cache/codex @openai/codex@{CODEX_VERSION})",
)
@pytest.mark.parametrize("model", MODELS)
def test_codex_completes_a_shell_tool_loop(
    proxy: RunningProxy, upstreams: Upstreams, tmp_path: Path, model: str
) -> None:
    finished, report, workdir = run_shell_task(
        "codex-ok",
        base_url=proxy.base_url,
        model=model,
        tmp_path=tmp_path,
        proxy_log=proxy.log,
        api_key=CLIENT_KEY,
    )
    assert finished.returncode == 0, report
    assert (workdir / "out.txt").read_text().strip() == "codex-ok", report
    assert ANSWER in finished.stdout, report

    bodies = upstream_bodies(upstreams, model)
    assert len(bodies) == 2, [json.dumps(body)[:300] for body in bodies]
    first, second = bodies
    assert tool_result(conversation(first)) is None
    assert "exec_command" in tool_names(first)
    output = tool_result(conversation(second))
    assert output is not None
    assert "Process exited with code 0" in output
    assert DEVELOPER_START in system_text(second)
    call_id = CODEX_CALL_IDS.get(model, "exec_command")
    assert calls_and_results(second) == ([(call_id, "exec_command")], [call_id])
    if model in (GEMINI_MODEL, VERTEX_GEMINI):  # Gemini's signature came back on its call
        called = [block for block in blocks(second) if "functionCall" in block]
        assert called[-1]["thoughtSignature"] == SIGNATURE


# --- Codex's recorded requests, replayed ------------------------------------------------------


def recorded(name: str) -> tuple[dict[str, str], dict[str, Any]]:
    recording = json.loads((RECORDINGS / f"{name}.json").read_text())
    headers = dict(recording["headers"])
    headers["authorization"] = f"Bearer {CLIENT_KEY}"
    return headers, recording["body"]


def responses_events(text: str) -> list[dict[str, Any]]:
    """The stream's events, each checked to be named by its `event:` line as its type."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.strip().splitlines()
        named = [line[len("event:") :].strip() for line in lines if line.startswith("event:")]
        data = "".join(line[len("data:") :].strip() for line in lines if line.startswith("data:"))
        if not data:
            continue
        event = json.loads(data)
        assert named in ([], [event["type"]]), block
        events.append(event)
    return events


def check_stream(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What Codex needs (SOURCE.md): every item added is done, then a response.completed last;
    returns the done items."""
    types = [event["type"] for event in events]
    assert types[0] == "response.created", types
    assert types[-1] == "response.completed", types
    assert "response.failed" not in types, types
    assert "error" not in types, types
    added = [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [item["id"] for item in done] == added, types
    assert done, types
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    assert [item["id"] for item in completed["output"]] == added
    numbers = [event["sequence_number"] for event in events]
    assert numbers == sorted(set(numbers)), numbers
    return done


@pytest.mark.parametrize("model", MODELS)
def test_codex_recordings_replay_through_every_kind(
    proxy: RunningProxy, upstreams: Upstreams, model: str
) -> None:
    done_by_turn = []
    for name in ("first_turn", "tool_result_turn"):
        headers, body = recorded(name)
        body = body | {"model": model}
        with httpx.Client(timeout=30) as client:
            answer = client.post(f"{proxy.base_url}/responses", headers=headers, json=body)
        assert answer.status_code == 200, (name, answer.text[:2000], str(proxy.log))
        assert answer.headers["content-type"].startswith("text/event-stream")
        warning = answer.headers.get("x-toolrelay-warning", "")
        assert "web_search" in warning, dict(answer.headers)
        done_by_turn.append(check_stream(responses_events(answer.text)))

    first_items, second_items = done_by_turn
    calls = [item for item in first_items if item["type"] == "function_call"]
    assert [(call["name"], json.loads(call["arguments"])) for call in calls] == [
        ("exec_command", {"cmd": COMMAND})
    ]
    assert all(call["call_id"] and call["status"] == "completed" for call in calls)
    messages = [item for item in second_items if item["type"] == "message"]
    assert [item["role"] for item in messages] == ["assistant"]
    assert "".join(part["text"] for part in messages[0]["content"]) == ANSWER

    bodies = upstream_bodies(upstreams, model)
    assert len(bodies) == 2
    for body in bodies:
        check_tools_and_instructions(body)
    second = bodies[1]
    output = tool_result(conversation(second))
    assert output is not None
    assert "codex-ok" in output
    assert "ENC123" not in json.dumps(second)  # an OpenAI-encrypted reasoning is not ours
    call_id = "exec_command" if model in (GEMINI_MODEL, VERTEX_GEMINI) else "call_1"
    assert calls_and_results(second) == ([(call_id, "exec_command")], [call_id])
    if model == OPENAI_MODEL:
        instructions = [m["role"] for m in second["messages"][:2]]
        assert instructions in (["developer"] * 2, ["system"] * 2), instructions


def check_tools_and_instructions(body: dict[str, Any]) -> None:
    """Codex's tools as the upstream got them: its namespace's tools flattened under their
    namespace's name, web_search (a hosted tool) left out; its developer instructions as the
    system's, its environment context not."""
    names = tool_names(body)
    assert "web_search" not in names
    assert {"exec_command", "write_stdin", "get_goal"} <= set(names), names
    assert {
        f"multi_agent_v1__{tool}"
        for tool in ("close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent")
    } <= set(names), names
    assert "multi_agent_v1" not in names
    assert DEVELOPER_START in system_text(body)
    assert "<environment_context>" not in system_text(body)
