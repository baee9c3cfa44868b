"""What Claude Code asks of Claude beyond the basics, on Bedrock and Vertex AI (issue 38),
through the in-process app to the validating doubles (tests/helpers/cloud_fuzz_doubles.py),
which refuse a beta their platform does not take as the platforms do: its `anthropic-beta`
values reach each platform only where it takes them (Bedrock's in
`additionalModelRequestFields.anthropic_beta`), the rest named in `x-toolrelay-warning`; a
provider's `betas` replaces the list; `thinking.budget_tokens: 31999` arrives exactly;
`adaptive` thinking and `output_config.effort` reach the Claude models that take them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.cloud_fuzz_doubles import (
    BEDROCK_MODEL,
    CLAUDE_MODEL,
    PROJECT,
    REGION,
    AnsweringBedrock,
    AnsweringVertex,
    Refusal,
)
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_bedrock import API_KEY
from tests.integration.conftest import CLIENT_KEY, make_config, raw_config, serve

pytestmark = pytest.mark.anyio

RECORDING = Path(__file__).resolve().parents[1] / "recordings" / "claude_code" / "first_turn.json"
RECORDED = json.loads(RECORDING.read_text())
BETAS = RECORDED["headers"]["anthropic-beta"]
NOT_TAKEN = ("claude-code-20250219", "mid-conversation-system-2026-04-07")
OPUS_46 = "us.anthropic.claude-opus-4-6-v1"


@dataclass
class Doubles:
    bedrock: AnsweringBedrock
    vertex: AnsweringVertex
    providers: dict[str, dict[str, Any]]


@pytest.fixture
def doubles(tmp_path: Path) -> Iterator[Doubles]:
    refusals: list[Refusal] = []
    with (
        GoogleTokenServer(ServiceAccount.generate()) as tokens,
        AnsweringBedrock(refusals) as bedrock,
        AnsweringVertex(tokens, refusals) as vertex,
    ):
        key_file = tokens.account.write_key_file(tmp_path / "sa.json", tokens.token_uri)
        providers = {
            "aws": {"kind": "bedrock", "region": bedrock.region, "base_url": bedrock.base_url},
            "gcp": {"kind": "vertex", "project": PROJECT, "region": REGION},
        }
        providers["aws"]["api_key"] = API_KEY
        providers["gcp"].update(base_url=vertex.base_url, credentials=str(key_file))
        yield Doubles(bedrock, vertex, providers)


@asynccontextmanager
async def running(doubles: Doubles, **provider: Any) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"].update(
        {name: {**given, **provider} for name, given in doubles.providers.items()}
    )
    raw["models"] += [
        {"name": "bedrock", "provider": "aws", "model": BEDROCK_MODEL, "max_tokens": 1024},
        {"name": "vertex", "provider": "gcp", "model": CLAUDE_MODEL, "max_tokens": 1024},
        {"name": "opus-46", "provider": "aws", "model": OPUS_46, "max_tokens": 1024},
    ]
    async with serve(make_config(raw)) as client:
        yield client


def _body(model: str, **changes: Any) -> dict[str, Any]:
    body = {**RECORDED["body"], "model": model, "stream": False}
    body["thinking"] = {"type": "enabled", "budget_tokens": 31999}
    body.pop("output_config", None)
    return {**body, **changes}


async def _post(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    headers = {"x-api-key": CLIENT_KEY, "anthropic-version": "2023-06-01", "anthropic-beta": BETAS}
    return await client.post("/v1/messages", json=body, headers=headers)


async def test_bedrock_gets_the_betas_it_takes_and_the_exact_budget(
    doubles: Doubles, anyio_backend: str
) -> None:
    async with running(doubles) as client:
        answer = await _post(client, _body("bedrock"))

    assert answer.status_code == 200, answer.text
    [exchange] = doubles.bedrock.exchanges
    fields = exchange.body["additionalModelRequestFields"]
    assert fields["thinking"] == {"type": "enabled", "budget_tokens": 31999}
    assert fields["anthropic_beta"] == [
        "interleaved-thinking-2025-05-14",
        "context-management-2025-06-27",
        "effort-2025-11-24",
    ]
    assert exchange.body["inferenceConfig"]["maxTokens"] > 31999
    warning = answer.headers["x-toolrelay-warning"]
    assert all(beta in warning for beta in NOT_TAKEN)


async def test_vertex_gets_the_betas_it_takes_and_the_exact_budget(
    doubles: Doubles, anyio_backend: str
) -> None:
    async with running(doubles) as client:
        answer = await _post(client, _body("vertex"))

    assert answer.status_code == 200, answer.text
    [exchange] = doubles.vertex.exchanges
    assert exchange.headers["anthropic-beta"].split(",") == [
        "interleaved-thinking-2025-05-14",
        "context-management-2025-06-27",
    ]
    assert "effort-2025-11-24" in answer.headers["x-toolrelay-warning"]
    assert exchange.body["thinking"] == {"type": "enabled", "budget_tokens": 31999}
    assert all(beta in answer.headers["x-toolrelay-warning"] for beta in NOT_TAKEN)


@pytest.mark.parametrize("model", ["bedrock", "vertex"])
async def test_a_providers_betas_replace_the_list(
    doubles: Doubles, anyio_backend: str, model: str
) -> None:
    async with running(doubles, betas=["context-management-2025-06-27"]) as client:
        answer = await _post(client, _body(model))

    assert answer.status_code == 200, answer.text
    exchange = (doubles.bedrock.exchanges or doubles.vertex.exchanges)[0]
    sent = exchange.body.get("additionalModelRequestFields", {}).get("anthropic_beta")
    sent = sent or exchange.headers["anthropic-beta"].split(",")
    assert sent == ["context-management-2025-06-27"]
    assert "interleaved-thinking-2025-05-14" in answer.headers["x-toolrelay-warning"]


async def test_adaptive_thinking_and_effort_reach_a_bedrock_claude_that_takes_them(
    doubles: Doubles, anyio_backend: str
) -> None:
    adaptive = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}
    async with running(doubles) as client:
        newer = await _post(client, _body("opus-46", **adaptive))
        older = await _post(client, _body("bedrock", **adaptive))

    assert newer.status_code == 200, newer.text
    assert older.status_code == 200, older.text
    first, second = (exchange.body for exchange in doubles.bedrock.exchanges)
    assert first["additionalModelRequestFields"]["thinking"] == {"type": "adaptive"}
    assert first["additionalModelRequestFields"]["output_config"] == {"effort": "high"}
    assert "thinking" not in second["additionalModelRequestFields"]
    assert "output_config" not in second["additionalModelRequestFields"]
