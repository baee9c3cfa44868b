"""Compaction through the whole app on the openai, anthropic and gemini kinds (CONTRACT.md,
"Codex and Claude Code: all of their protocol"): a `compaction_trigger` answered with one
`compaction` item holding the model's summary (one upstream request carrying the conversation
and ToolRelay's instructions), the item expanded into its summary on the next turn in place of
what it replaced, `POST /v1/responses/compact` (the openai SDK's `responses.compact`), stored
chains cut at the trigger, a foreign compaction item refused by position."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import respx

from app.compaction.instructions import INSTRUCTIONS
from app.faces.responses.compaction import SUMMARY_HEADING, summary_of
from tests.helpers.mock_gemini import gemini_answer
from tests.integration.conftest import (
    ANTHROPIC_URL,
    CLIENT_KEY,
    GEMINI_KEY,
    OPENAI_URL,
    assert_error,
    make_config,
    raw_config,
    serve,
)

pytestmark = pytest.mark.anyio

GEMINI_BASE = "http://gemini.upstream.test"
GEMINI_URL = f"{GEMINI_BASE}/v1beta/models/gemini-2.5-flash:generateContent"
URLS = {"mini": OPENAI_URL, "claude": ANTHROPIC_URL, "gemini": GEMINI_URL}
SUMMARY = "Task: fix the failing test. Files: app.py fixed. Next: run the suite."
TASK = "fix the failing test in app.py"
COMMAND_OUTPUT = "1 failed: test_app.py::test_add"
DEVELOPER = {"type": "message", "role": "developer", "content": "You are a coding agent."}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "exec_command",
    "arguments": '{"cmd": "pytest -q"}',
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": COMMAND_OUTPUT}
TRIGGER = {"type": "compaction_trigger"}
TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]


def openai_text(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 41, "total_tokens": 123},
    }


def anthropic_text(text: str) -> dict[str, Any]:
    return {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 82, "output_tokens": 41},
    }


ANSWERS = {
    "mini": openai_text,
    "claude": anthropic_text,
    "gemini": lambda text: gemini_answer([{"text": text}]),
}


class Upstreams:
    """Every kind's upstream, answering `texts` in turn and keeping each request's body."""

    def __init__(self, router: respx.Router) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.texts: list[str] = []
        for model, url in URLS.items():
            router.post(url).mock(side_effect=self._answer(model))

    def _answer(self, model: str) -> Any:
        def answer(request: httpx.Request) -> httpx.Response:
            self.bodies.append(json.loads(request.content))
            return httpx.Response(200, json=ANSWERS[model](self.texts.pop(0)))

        return answer


@pytest.fixture
def upstreams(upstream: respx.Router) -> Upstreams:
    return Upstreams(upstream)


@pytest.fixture
async def client(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": GEMINI_KEY}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as proxy:
        yield proxy


def sdk(client: httpx.AsyncClient) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=CLIENT_KEY, base_url="http://toolrelay.test/v1", http_client=client, max_retries=0
    )


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def compaction_of(response: dict[str, Any]) -> dict[str, Any]:
    (item,) = response["output"]
    assert item["type"] == "compaction"
    assert item["id"].startswith("cmp_")
    assert set(item) == {"type", "id", "encrypted_content"}
    assert SUMMARY not in item["encrypted_content"]  # opaque to the client
    return item


def request(model: str, *items: Any, **fields: Any) -> dict[str, Any]:
    return {"model": model, "input": list(items), "tools": TOOLS, "store": False, **fields}


@pytest.mark.parametrize("model", list(URLS))
@pytest.mark.parametrize("stream", [False, True])
async def test_a_trigger_is_answered_with_the_models_summary(
    client: httpx.AsyncClient, upstreams: Upstreams, model: str, stream: bool
) -> None:
    upstreams.texts = [SUMMARY]
    body = request(model, DEVELOPER, USER, CALL, OUTPUT, TRIGGER, stream=stream)
    answered = await client.post("/v1/responses", json=body)
    assert answered.status_code == 200, answered.text
    (sent,) = upstreams.bodies
    wire = json.dumps(sent)
    for part in ("You are a coding agent.", TASK, "pytest -q", COMMAND_OUTPUT, "exec_command"):
        assert part in wire
    assert INSTRUCTIONS.splitlines()[0] in json.dumps(sent).replace("\\n", "\n")
    if stream:
        seen = events(answered.text)
        assert [event["type"] for event in seen] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ]
        assert [event["sequence_number"] for event in seen] == [0, 1, 2, 3, 4]
        response = seen[-1]["response"]
        assert seen[3]["item"] == compaction_of(response)
    else:
        response = answered.json()
    assert response["status"] == "completed"
    assert summary_of(compaction_of(response)["encrypted_content"]) == SUMMARY
    assert response["usage"]["input_tokens"] == 82
    assert response["usage"]["output_tokens"] in (41, 30 + 11)  # gemini counts its thoughts


@pytest.mark.parametrize("model", list(URLS))
async def test_the_next_turn_carries_the_summary_not_what_it_replaced(
    client: httpx.AsyncClient, upstreams: Upstreams, model: str
) -> None:
    upstreams.texts = [SUMMARY, "running the suite now"]
    compacted = await client.post("/v1/responses", json=request(model, USER, CALL, OUTPUT, TRIGGER))
    item = compaction_of(compacted.json())
    later = {"type": "message", "role": "user", "content": "go on"}
    following = await client.post("/v1/responses", json=request(model, USER, item, later))
    assert following.status_code == 200, following.text
    wire = json.dumps(upstreams.bodies[-1])
    assert SUMMARY in wire
    assert SUMMARY_HEADING.strip()[:20] in wire
    assert COMMAND_OUTPUT not in wire
    assert "pytest -q" not in wire
    assert wire.index(TASK) < wire.index(SUMMARY) < wire.index("go on")  # in place


async def test_a_stored_chain_goes_on_from_the_summary(
    client: httpx.AsyncClient, upstreams: Upstreams
) -> None:
    upstreams.texts = ["I ran pytest: " + COMMAND_OUTPUT, SUMMARY, "carrying on"]
    first = (await client.post("/v1/responses", json={"model": "claude", "input": TASK})).json()
    trigger = {"model": "claude", "input": [TRIGGER], "previous_response_id": first["id"]}
    compacted = (await client.post("/v1/responses", json=trigger)).json()
    compaction_of(compacted)
    assert COMMAND_OUTPUT in json.dumps(upstreams.bodies[1])  # the summary saw it all
    chained = {"model": "claude", "input": "go on", "previous_response_id": compacted["id"]}
    following = await client.post("/v1/responses", json=chained)
    assert following.status_code == 200, following.text
    wire = json.dumps(upstreams.bodies[2])
    assert TASK in wire
    assert SUMMARY in wire
    assert "go on" in wire
    assert COMMAND_OUTPUT not in wire
    assert INSTRUCTIONS.splitlines()[0] not in wire.replace("\\n", "\n")  # ours, asked once


async def test_the_sdks_compact_on_an_anthropic_model(
    client: httpx.AsyncClient, upstreams: Upstreams
) -> None:
    upstreams.texts = [SUMMARY]
    assistant = {"type": "message", "role": "assistant", "content": "on it"}
    compacted = await sdk(client).responses.compact(
        model="claude",
        input=[USER, assistant, CALL, OUTPUT],  # type: ignore[list-item]
        instructions="You are a coding agent.",
    )
    assert compacted.object == "response.compaction"
    user, item = compacted.output
    assert user.model_dump(exclude_none=True) == USER
    assert item.type == "compaction"
    assert summary_of(item.encrypted_content) == SUMMARY
    assert compacted.usage.input_tokens == 82
    assert compacted.usage.output_tokens == 41
    (sent,) = upstreams.bodies
    assert sent["system"][0]["text"] == "You are a coding agent."
    assert COMMAND_OUTPUT in json.dumps(sent)
    assert "on it" in json.dumps(sent)


async def test_compact_keeps_the_user_messages_of_a_stored_chain(
    client: httpx.AsyncClient, upstreams: Upstreams
) -> None:
    upstreams.texts = ["first answer", SUMMARY]
    first = await sdk(client).responses.create(model="gemini", input=TASK)
    compacted = await sdk(client).responses.compact(
        model="gemini", previous_response_id=first.id, input="and this too"
    )
    stored, given = (item.model_dump(exclude_none=True) for item in compacted.output[:-1])
    assert stored["role"] == "user"
    assert stored["content"][0]["text"] == TASK
    assert given == {"type": "message", "role": "user", "content": "and this too"}
    assert compacted.output[-1].type == "compaction"
    assert "first answer" in json.dumps(upstreams.bodies[1])


async def test_a_compaction_item_not_made_here_is_a_400_naming_it(
    client: httpx.AsyncClient, upstreams: Upstreams
) -> None:
    foreign = {"type": "compaction", "id": "cmp_oa", "encrypted_content": "gAAAAB-openai-enc"}
    answered = await client.post("/v1/responses", json=request("claude", USER, foreign))
    error = assert_error(answered, 400)
    assert error["param"] == "input[1]"
    assert "input[1]" in error["message"]
    assert upstreams.bodies == []


async def test_the_summary_call_counts_against_the_key(
    client: httpx.AsyncClient, upstreams: Upstreams
) -> None:
    """A model the key may not use is refused before anything reaches an upstream."""
    answered = await client.post("/v1/responses", json=request("nope", USER, TRIGGER))
    assert answered.status_code in (400, 404), answered.text
    assert upstreams.bodies == []


@pytest.mark.parametrize("stream", [False, True])
async def test_an_empty_summary_is_a_502_not_an_empty_compaction(
    client: httpx.AsyncClient, upstreams: Upstreams, stream: bool
) -> None:
    """Replacing the conversation with nothing would make the agent forget its task."""
    upstreams.texts = ["  "]
    body = request("claude", USER, CALL, OUTPUT, TRIGGER, stream=stream)
    answered = await client.post("/v1/responses", json=body)
    assert answered.status_code == 502, answered.text
    assert answered.json()["error"]["code"] == "upstream_protocol_error"
