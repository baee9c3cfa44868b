"""`prompt_cache_key` reaches openai-kind upstreams (CONTRACT.md, "Prompt caching"): from chat
as sent, from the Responses face (Codex's own first request, recorded), and from the Messages
face, where `metadata.user_id` becomes it (Claude Code's own request, recorded; its user_id is
longer than OpenAI's 64 characters, so a digest of it goes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import orjson

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import Target
from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import USAGE, openai_text_chunks, openai_tool_completion
from tests.integration.conftest import chat, make_config, raw_config, serve

RECORDINGS = Path(__file__).parent.parent / "recordings"


def recorded(client: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((RECORDINGS / client / name).read_text())["body"]
    return body


def config(upstream: MockUpstream) -> Any:
    return make_config(raw_config(f"{upstream.base_url}/v1", upstream.base_url))


def text_stream() -> Reply:
    usage_chunk = {**openai_text_chunks("ok")[-1], "choices": [], "usage": USAGE}
    return Reply(frames=openai_frames([*openai_text_chunks("ok"), usage_chunk]))


def sent(upstream: MockUpstream) -> dict[str, Any]:
    (exchange,) = upstream.requests(OPENAI_PATH)
    body: dict[str, Any] = exchange.body
    return body


async def test_chat_relays_the_key_as_sent(mock_upstream: MockUpstream, anyio_backend: str) -> None:
    mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(config(mock_upstream)) as client:
        body = chat(prompt_cache_key="session-1", prompt_cache_retention="24h")
        assert (await client.post("/v1/chat/completions", json=body)).is_success
    assert sent(mock_upstream)["prompt_cache_key"] == "session-1"
    assert sent(mock_upstream)["prompt_cache_retention"] == "24h"


def test_azure_relays_the_key_as_sent() -> None:
    target = Target("m", "az", ProviderConfig(kind="azure", base_url="https://x", api_key="k"), "d")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "prompt_cache_key": "k1"}
    built = TRANSLATORS["azure"].build_request(parse_chat_request(orjson.dumps(body)), target)
    assert orjson.loads(built.body)["prompt_cache_key"] == "k1"


async def test_codexs_key_reaches_an_openai_kind_through_the_responses_face(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    codex = recorded("codex", "first_turn.json") | {"model": "mini"}
    mock_upstream.add(text_stream())
    async with serve(config(mock_upstream)) as client:
        response = await client.post("/v1/responses", json=codex)
        assert response.is_success, response.text
    assert sent(mock_upstream)["prompt_cache_key"] == codex["prompt_cache_key"]


async def test_claude_codes_user_id_becomes_the_key_on_an_openai_kind(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    claude_code = recorded("claude_code", "first_turn.json") | {"model": "mini"}
    assert len(claude_code["metadata"]["user_id"]) > 64
    keys = []
    for _ in range(2):
        mock_upstream.add(text_stream())
        async with serve(config(mock_upstream)) as client:
            response = await client.post("/v1/messages", json=claude_code)
            assert response.is_success, response.text
        keys.append(sent(mock_upstream)["prompt_cache_key"])
        mock_upstream.reset()
    assert keys[0] == keys[1]
    assert 0 < len(keys[0]) <= 64


async def test_a_short_user_id_goes_as_it_is(
    mock_upstream: MockUpstream, anyio_backend: str
) -> None:
    mock_upstream.add(Reply(json=openai_tool_completion()))
    body = {
        "model": "mini",
        "max_tokens": 100,
        "metadata": {"user_id": "user-7"},
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with serve(config(mock_upstream)) as client:
        response: httpx.Response = await client.post("/v1/messages", json=body)
        assert response.is_success, response.text
    assert sent(mock_upstream)["prompt_cache_key"] == "user-7"
