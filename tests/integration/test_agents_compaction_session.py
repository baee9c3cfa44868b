"""The Agents SDK's `OpenAIResponsesCompactionSession` (openai-agents, installed) against a
model served by Claude: after a turn the session calls `responses.compact`, replaces its
history with the user's messages and ToolRelay's `compaction` item, and the next turn's request
reaches Claude with the summary in place of the assistant's earlier answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx
from agents import (
    Agent,
    OpenAIProvider,
    RunConfig,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
from agents.memory import OpenAIResponsesCompactionSession
from openai import AsyncOpenAI

from app.compaction.instructions import INSTRUCTIONS
from tests.integration.conftest import ANTHROPIC_URL, CLIENT_KEY, make_config, raw_config, serve
from tests.integration.test_responses_compaction import anthropic_text

pytestmark = pytest.mark.anyio

MODEL = "gpt-4.1"  # the session accepts OpenAI model names only; ToolRelay serves it by Claude
FIRST_ANSWER = "The capital of Burkina Faso is Ouagadougou."
SUMMARY = "SUMMARY-41c: the user asked for a capital; it was answered (Ouagadougou)."


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
async def client(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["models"].append({"name": MODEL, "provider": "an", "model": "claude-sonnet-4-5"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as proxy:
        yield proxy


async def test_the_compaction_session_on_a_claude_model(
    client: httpx.AsyncClient, upstream: respx.Router
) -> None:
    bodies: list[dict[str, Any]] = []
    texts = [FIRST_ANSWER, SUMMARY, "Bamako.", SUMMARY]  # it compacts after every turn here

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=anthropic_text(texts.pop(0)))

    upstream.post(ANTHROPIC_URL).mock(side_effect=answer)
    sdk = AsyncOpenAI(
        api_key=CLIENT_KEY, base_url="http://toolrelay.test/v1", http_client=client, max_retries=0
    )
    session = OpenAIResponsesCompactionSession(
        "s1",
        SQLiteSession("s1"),
        client=sdk,
        model=MODEL,
        should_trigger_compaction=lambda context: True,
    )
    agent = Agent(name="geo", instructions="Answer briefly.")
    config = RunConfig(model=MODEL, model_provider=OpenAIProvider(openai_client=sdk))
    first = await Runner.run(agent, "Capital of Burkina Faso?", session=session, run_config=config)
    assert first.final_output == FIRST_ANSWER
    history = await session.get_items()
    assert [item.get("type") for item in history] == ["message", "compaction"]
    assert INSTRUCTIONS.splitlines()[0] in json.dumps(bodies[1])
    second = await Runner.run(agent, "And of Mali?", session=session, run_config=config)
    assert second.final_output == "Bamako."
    assert len(bodies) == 4
    sent = json.dumps(bodies[2])
    assert SUMMARY in sent
    assert "Capital of Burkina Faso?" in sent
    assert FIRST_ANSWER not in sent  # replaced by the summary
