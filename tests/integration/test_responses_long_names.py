"""Responses tools whose upstream function name would be longer than a function name may be
(CONTRACT.md, "OpenAI Responses API": namespaces): Codex sends MCP tools as `namespace`s
named `mcp__<server>__`, and `NAMESPACE__NAME` easily passes 64 characters. Each kind gets a
name it takes (cut with a digest, as the hosted MCP tool's), the client gets its own namespace
and name back, and the call sent back in history goes up under the same short name, turn
after turn. Played on the openai, anthropic and gemini kinds, stream and not."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import respx

from tests.helpers import anthropic_rules, gemini_rules
from tests.helpers.mock_anthropic import message, message_events
from tests.helpers.mock_gemini import gemini_answer, issued_signatures
from tests.helpers.mock_upstream import Frame, Reply, anthropic_frames, openai_frames
from tests.helpers.responses_stream import assert_responses_stream, parse_responses_sse
from tests.helpers.upstream_answers import openai_text_chunks
from tests.integration.conftest import (
    ANTHROPIC_URL,
    GEMINI_KEY,
    OPENAI_URL,
    make_config,
    raw_config,
    serve,
    sse_response,
)

pytestmark = pytest.mark.anyio

GEMINI_BASE = "http://gemini.upstream.test"
GEMINI_MODELS = f"{GEMINI_BASE}/v1beta/models/gemini-2.5-flash"
NAME_RULE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
NAMESPACE = "mcp__" + "a_rather_long_server_name_from_the_codex_config_" * 2 + "_"
LONG_NAME = "read_the_file_with_a_long_name"
SHORT_NAME = "list_directory"
TOOLS = [
    {"type": "function", "name": "x" * 70, "parameters": {"type": "object", "properties": {}}},
    {
        "type": "namespace",
        "name": NAMESPACE,
        "description": "A server's tools",
        "tools": [
            {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}
            for name in (LONG_NAME, SHORT_NAME)
        ],
    },
]
SIGNATURE = "TG9uZyBuYW1lcw=="


class LongNames:
    """Each kind's upstream: screens the body by its kind's rules (every name one it takes),
    remembers the names offered and the call names in the history, and calls the second
    offered function (the namespace's first) until a tool result comes back."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []
        self.replayed: list[list[str]] = []
        self.issued: dict[tuple[str, str], str] = {}

    def openai(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self._saw([tool["function"]["name"] for tool in body["tools"]], body["messages"])
        names = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or ()]
        self.replayed.append(names)
        if any(m["role"] == "tool" for m in body["messages"]):
            return _openai_text(body)
        call = {"id": "call_long_1", "type": "function"}
        call["function"] = {"name": self.offered[-1][1], "arguments": "{}"}
        if not body.get("stream"):
            answer = {"role": "assistant", "content": None, "tool_calls": [call]}
            return httpx.Response(200, json=_completion(answer, "tool_calls"))
        delta = {"index": 0, "delta": {"tool_calls": [call | {"index": 0}]}}
        chunks = openai_text_chunks()
        chunks.insert(1, chunks[1] | {"choices": [delta | {"finish_reason": None}]})
        chunks[-1]["choices"][0]["finish_reason"] = "tool_calls"
        return sse_response(openai_frames(chunks))

    def anthropic(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        problems = anthropic_rules.request_problems(body)
        assert not problems, problems
        self._saw([tool["name"] for tool in body["tools"]], [])
        blocks = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        self.replayed.append([b["name"] for b in blocks if b["type"] == "tool_use"])
        if any(b["type"] == "tool_result" for b in blocks):
            whole = message([{"type": "text", "text": "done"}], "end_turn")
        else:
            use = {"type": "tool_use", "id": "toolu_long_1", "name": self.offered[-1][1]}
            whole = message([use | {"input": {}}], "tool_use")
        if body.get("stream"):
            return sse_response(anthropic_frames(message_events(whole)))
        return httpx.Response(200, json=whole)

    def gemini(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        problems = gemini_rules.request_problems(body, self.issued)
        assert not problems, problems
        declared = [d["name"] for tool in body["tools"] for d in tool["functionDeclarations"]]
        self._saw(declared, [])
        parts = [p for content in body["contents"] for p in content["parts"]]
        self.replayed.append([p["functionCall"]["name"] for p in parts if "functionCall" in p])
        if any("functionResponse" in p for p in parts):
            answer_parts: list[dict[str, Any]] = [{"text": "done"}]
        else:
            call = {"name": self.offered[-1][1], "args": {}}
            answer_parts = [{"functionCall": call, "thoughtSignature": SIGNATURE}]
        answer = gemini_answer(answer_parts)
        self.issued.update(issued_signatures(Reply(json=answer)))
        if "streamGenerateContent" in str(request.url):
            return sse_response([Frame(answer)])
        return httpx.Response(200, json=answer)

    def _saw(self, names: list[str], messages: list[dict[str, Any]]) -> None:
        for name in names:
            assert NAME_RULE.fullmatch(name), f"a function name no kind takes: {name!r}"
        self.offered.append(names)


def _completion(message_: dict[str, Any], finish: str) -> dict[str, Any]:
    choice = {"index": 0, "message": message_ | {"refusal": None}, "finish_reason": finish}
    return {
        "id": "chatcmpl-long",
        "object": "chat.completion",
        "created": 1727346178,
        "model": "gpt-4o-mini",
        "choices": [choice],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


def _openai_text(body: dict[str, Any]) -> httpx.Response:
    if body.get("stream"):
        return sse_response(openai_frames(openai_text_chunks("done")))
    answer = {"role": "assistant", "content": "done"}
    return httpx.Response(200, json=_completion(answer, "stop"))


@pytest.fixture
def names() -> LongNames:
    return LongNames()


@pytest.fixture
async def proxy(names: LongNames, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    router = respx.Router(assert_all_mocked=True)
    router.post(OPENAI_URL).mock(side_effect=names.openai)
    router.post(ANTHROPIC_URL).mock(side_effect=names.anthropic)
    router.post(url__startswith=GEMINI_MODELS).mock(side_effect=names.gemini)
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": GEMINI_KEY}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    async with serve(make_config(raw), transport=httpx.MockTransport(router.async_handler)) as c:
        yield c


async def _respond(proxy: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await proxy.post("/v1/responses", json=body)
    assert response.status_code == 200, response.text
    if body.get("stream"):
        return assert_responses_stream(parse_responses_sse(response.content))
    return dict(response.json())


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", ["mini", "claude", "gemini"])
async def test_a_long_namespaced_name_is_mapped_and_stays_the_same_in_history(
    proxy: httpx.AsyncClient, names: LongNames, model: str, stream: bool
) -> None:
    user = {"role": "user", "content": "Read the file."}
    first = await _respond(
        proxy, {"model": model, "input": [user], "tools": TOOLS, "stream": stream}
    )
    (call,) = [item for item in first["output"] if item["type"] == "function_call"]
    assert (call["namespace"], call["name"]) == (NAMESPACE, LONG_NAME)
    offered = names.offered[0]
    assert len(set(offered)) == 3  # each its own name (NAME_RULE checked them all)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "the text"}
    second = {"model": model, "input": [user, call, output], "tools": TOOLS, "stream": stream}
    answer = await _respond(proxy, second)
    assert answer["output"][-1]["content"][0]["text"] == "done"
    assert names.offered[1] == offered  # byte-stable: the same short names every turn
    assert names.replayed[1] == [offered[1]]
