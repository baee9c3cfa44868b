"""Compaction on a `responses: native` provider: both forms go as sent (CONTRACT.md, "Codex and
Claude Code: all of their protocol"): a request ending in `compaction_trigger` to the
upstream's /responses, `POST /v1/responses/compact` to its /responses/compact, each answer
back unchanged, OpenAI's own compaction items included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply
from tests.integration.conftest import CLIENT_KEY, PROVIDER_KEY, make_config, serve
from tests.integration.test_responses_native import UPSTREAM_RESPONSE, native_config

pytestmark = pytest.mark.anyio

OPENAI_COMPACTION = {"type": "compaction", "id": "cmp_up_1", "encrypted_content": "gAAAAB-oai"}
HISTORY: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "fix it"},
    {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "ok"},
]
COMPACTED = {
    "id": "resp_up_compacted",
    "object": "response.compaction",
    "created_at": 1764000000,
    "output": [HISTORY[0], OPENAI_COMPACTION],
    "usage": {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 150,
    },
}


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


async def test_a_trigger_goes_as_sent(upstream: MockUpstream, anyio_backend: str) -> None:
    answer = {**UPSTREAM_RESPONSE, "output": [OPENAI_COMPACTION]}
    upstream.add(Reply(json=answer), "/v1/responses")
    sent = {"model": "native", "input": [*HISTORY, {"type": "compaction_trigger"}]}
    async with serve(make_config(native_config(upstream))) as client:
        answered = await client.post("/v1/responses", json=sent)
        assert answered.status_code == 200, answered.text
        assert answered.json() == answer
        (exchange,) = upstream.requests("/v1/responses")
        assert exchange.body == {**sent, "model": "gpt-5"}
        # OpenAI's own compaction item goes back to it as sent, too.
        upstream.add(Reply(json=UPSTREAM_RESPONSE), "/v1/responses")
        following = {"model": "native", "input": [HISTORY[0], OPENAI_COMPACTION, "go on"]}
        assert (await client.post("/v1/responses", json=following)).status_code == 200
    assert upstream.requests("/v1/responses")[1].body == {**following, "model": "gpt-5"}
    assert upstream.requests(OPENAI_PATH) == []


async def test_compact_goes_to_the_upstreams_compact(
    upstream: MockUpstream, anyio_backend: str
) -> None:
    upstream.add(Reply(json=COMPACTED), "/v1/responses/compact")
    async with serve(make_config(native_config(upstream))) as client:
        sdk = openai.AsyncOpenAI(
            api_key=CLIENT_KEY, base_url="http://toolrelay.test/v1", http_client=client
        )
        compacted = await sdk.responses.compact(model="native", input=HISTORY)  # type: ignore[arg-type]
    assert compacted.id == "resp_up_compacted"
    assert compacted.output[-1].type == "compaction"
    (exchange,) = upstream.requests("/v1/responses/compact")
    assert exchange.body == {"model": "gpt-5", "input": HISTORY}
    assert exchange.headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert upstream.requests(OPENAI_PATH) == []
