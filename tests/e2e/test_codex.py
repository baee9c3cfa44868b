"""OpenAI's Codex CLI (`codex exec`, pinned 0.169.0, installed from npm by .ci/run) with its
`wire_api = "responses"` provider at a real proxy process's /v1, on an openai-kind and a
gemini-kind model in front of local mock upstreams that answer like a model would: the first
agent turn calls the shell tool `exec_command`, the turn after the tool result answers "done".
Codex must really run the command and finish with that answer.

Also Codex's recorded requests (tests/recordings/codex/, see SOURCE.md there) replayed as they
came through the proxy to an openai-, anthropic- and gemini-kind upstream: what each upstream
gets, and the Responses events Codex needs back."""

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
from tests.helpers.codex_cli import CODEX_VERSION, codex_binary, run_codex
from tests.helpers.mock_anthropic import MockAnthropic
from tests.helpers.mock_gemini import MockGemini, gemini_answer, gemini_path, issued_signatures
from tests.helpers.mock_upstream import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import openai_text_chunks

pytestmark = pytest.mark.e2e

RECORDINGS = REPO / "tests" / "recordings" / "codex"
COMMAND = "echo codex-ok > out.txt"
CALL_ID = "call_codex_1"
ANSWER = "done"
SIGNATURE = "Q29kZXggb24gR2VtaW5p"
DEVELOPER_START = "You are a coding agent running in the Codex CLI"
OPENAI_MODEL = "gpt-4o-mini"
GEMINI_MODEL = "gemini-2.5-flash"
CLAUDE_MODEL = "claude-sonnet-4-5"


def tool_result(messages: list[dict[str, Any]]) -> str | None:
    """What the shell tool returned, once the conversation has a tool result."""
    for message in messages:
        if message.get("role") == "tool":
            return str(message["content"])
        for part in message.get("parts") or ():
            if "functionResponse" in part:
                return json.dumps(part["functionResponse"]["response"])
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return json.dumps(block.get("content"))
    return None


class ScriptedOpenAI(MockUpstream):
    """Answers by what it is asked: call `exec_command`, then (given its result) say done."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if exchange.path != OPENAI_PATH or exchange.headers.get("authorization") != (
            f"Bearer {PROVIDER_KEY}"
        ):
            return Reply(401, json={"error": {"message": "bad key or path"}})
        if tool_result(exchange.body["messages"]) is not None:
            return Reply(frames=openai_frames(openai_text_chunks(ANSWER)))
        arguments = json.dumps({"cmd": COMMAND})
        call = {"index": 0, "id": CALL_ID, "type": "function"}
        call["function"] = {"name": "exec_command", "arguments": arguments}
        chunks = openai_text_chunks()
        delta = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
        chunks.insert(1, chunks[1] | {"choices": [delta]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return Reply(frames=openai_frames(chunks))


class ScriptedGemini(MockGemini):
    """The same script as Gemini streams it, screened as Gemini screens requests (its own
    signatures must come back)."""

    def __init__(self) -> None:
        super().__init__(GEMINI_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        if tool_result(exchange.body["contents"]) is not None:
            parts: list[dict[str, Any]] = [{"text": ANSWER}]
        else:
            call = {"name": "exec_command", "args": {"cmd": COMMAND}}
            parts = [{"functionCall": call, "thoughtSignature": SIGNATURE}]
        reply = Reply(frames=[Frame(gemini_answer(parts))])
        self.issued.update(issued_signatures(reply))
        return reply


class ScriptedAnthropic(MockAnthropic):
    """The same script as Anthropic streams it, screened as the Messages API screens."""

    def __init__(self) -> None:
        super().__init__(ANTHROPIC_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        if tool_result(exchange.body["messages"]) is not None:
            block: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": ANSWER}
            stop = "end_turn"
        else:
            block = {"type": "tool_use", "id": "toolu_codex_1", "name": "exec_command"}
            block["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": json.dumps({"cmd": COMMAND})}
            stop = "tool_use"
        usage = {"input_tokens": 120, "output_tokens": 12}
        start = {"id": "msg_codex_1", "type": "message", "role": "assistant", "content": []}
        start |= {"model": CLAUDE_MODEL, "stop_reason": None, "usage": usage}
        events = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage},
            {"type": "message_stop"},
        ]
        return Reply(frames=anthropic_frames(events))


Upstreams = tuple[ScriptedOpenAI, ScriptedGemini, ScriptedAnthropic]


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with ScriptedOpenAI() as oa, ScriptedGemini() as gemini, ScriptedAnthropic() as claude:
        yield oa, gemini, claude


@pytest.fixture(scope="module")
def proxy(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    oa, gemini, claude = upstreams
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{gemini.base_url}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{claude.base_url}", api_key: {ANTHROPIC_KEY}}}""",
        f"""  - {{name: {OPENAI_MODEL}, provider: oa, model: {OPENAI_MODEL}}}
  - {{name: {GEMINI_MODEL}, provider: gm, model: {GEMINI_MODEL}}}
  - {{name: {CLAUDE_MODEL}, provider: an, model: {CLAUDE_MODEL}, max_tokens: 4096}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("codex-proxy")) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstreams: Upstreams) -> None:
    for upstream in upstreams:
        upstream.reset()


def upstream_for(upstreams: Upstreams, model: str) -> MockUpstream:
    oa, gemini, claude = upstreams
    return {OPENAI_MODEL: oa, GEMINI_MODEL: gemini, CLAUDE_MODEL: claude}[model]


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
    names = []
    for tool in body.get("tools") or []:
        if "function" in tool:
            names.append(tool["function"]["name"])
        elif "functionDeclarations" in tool:
            names += [declaration["name"] for declaration in tool["functionDeclarations"]]
        else:
            names.append(tool["name"])
    return names


# --- Codex itself -----------------------------------------------------------------------------


@pytest.mark.skipif(
    codex_binary() is None,
    reason=f"Codex {CODEX_VERSION} is not installed under .cache/codex: `bash .ci/run` "
    f"installs it (npm install --prefix .cache/codex @openai/codex@{CODEX_VERSION})",
)
@pytest.mark.parametrize("model", [OPENAI_MODEL, GEMINI_MODEL, CLAUDE_MODEL])
def test_codex_completes_a_shell_tool_loop(
    proxy: RunningProxy, upstreams: Upstreams, tmp_path: Path, model: str
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    finished = run_codex(
        "Run echo codex-ok > out.txt",
        base_url=proxy.base_url,
        model=model,
        workdir=workdir,
        home=tmp_path / "codex-home",
        api_key=CLIENT_KEY,
    )
    report = f"exit {finished.returncode}\n{finished.stdout[-2000:]}\n{finished.stderr[-4000:]}"
    report += f"\nproxy log: {proxy.log}"
    assert finished.returncode == 0, report
    assert (workdir / "out.txt").read_text().strip() == "codex-ok", report
    assert ANSWER in finished.stdout, report

    upstream = upstream_for(upstreams, model)
    if model == GEMINI_MODEL:
        assert all(e.path == gemini_path(model, stream=True) for e in upstream.exchanges)
    bodies = [exchange.body for exchange in upstream.exchanges]
    assert len(bodies) == 2, [json.dumps(body)[:300] for body in bodies]
    first, second = bodies
    assert tool_result(conversation(first)) is None
    assert "exec_command" in tool_names(first)
    output = tool_result(conversation(second))
    assert output is not None
    assert "Process exited with code 0" in output
    assert DEVELOPER_START in system_text(second)
    assert all(body.get("stream", True) is True for body in bodies)
    if model == OPENAI_MODEL:
        calls = [m for m in second["messages"] if m.get("tool_calls")]
        assert calls[-1]["tool_calls"][0]["id"] == CALL_ID
        assert [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"] == [CALL_ID]
    elif model == GEMINI_MODEL:
        parts = [part for content in second["contents"] for part in content["parts"]]
        called = [part for part in parts if "functionCall" in part]
        assert called[-1]["thoughtSignature"] == SIGNATURE
        responses = [part["functionResponse"] for part in parts if "functionResponse" in part]
        assert [response["name"] for response in responses] == ["exec_command"]
    else:
        results = [
            block
            for message in second["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        assert [block["tool_use_id"] for block in results] == ["toolu_codex_1"]


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


@pytest.mark.parametrize("model", [OPENAI_MODEL, CLAUDE_MODEL, GEMINI_MODEL])
def test_codex_recordings_replay_through_every_kind(
    proxy: RunningProxy, upstreams: Upstreams, model: str
) -> None:
    upstream = upstream_for(upstreams, model)
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

    bodies = [exchange.body for exchange in upstream.exchanges]
    assert len(bodies) == 2
    for body in bodies:
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
    second = bodies[1]
    output = tool_result(conversation(second))
    assert output is not None
    assert "codex-ok" in output
    assert "ENC123" not in json.dumps(second)  # an OpenAI-encrypted reasoning is not ours
    if model == OPENAI_MODEL:
        assert [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"] == ["call_1"]
        instructions = [m["role"] for m in second["messages"][:2]]
        assert instructions in (["developer"] * 2, ["system"] * 2), instructions
    elif model == CLAUDE_MODEL:
        results = [
            block
            for message in second["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        assert [block["tool_use_id"] for block in results] == ["call_1"]
    if model == GEMINI_MODEL:
        assert upstream.exchanges[0].path == gemini_path(model, stream=True)
    elif model == CLAUDE_MODEL:
        assert upstream.exchanges[0].path == ANTHROPIC_PATH
        assert all(body["stream"] is True for body in bodies)
