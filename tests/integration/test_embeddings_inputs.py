"""What /v1/embeddings takes as `input` (issue 29, CONTRACT.md "Other OpenAI endpoints"):
token-id arrays, which LangChain's OpenAIEmbeddings sends on its defaults, embedded by the demo
and refused by a kind that needs text with a way to send text; an empty input refused as
empty; a kind without embeddings refused as such whether or not its provider has a key."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.helpers.mock_gemini import MockGemini
from tests.helpers.mock_upstream import MockUpstream
from tests.integration.conftest import assert_error, make_config, raw_config, serve
from tests.integration.test_embeddings import EMBEDDINGS, config, gemini  # noqa: F401

pytestmark = pytest.mark.anyio


async def test_demo_embeds_token_arrays_the_same_ids_the_same_vector(
    mock_upstream: MockUpstream,
) -> None:
    body = {"model": "demo", "input": [[791, 8415, 7731], [64, 5679], [791, 8415, 7731]]}
    async with serve(config(mock_upstream)) as client:
        answer = (await client.post(EMBEDDINGS, json=body)).json()
        one = await client.post(EMBEDDINGS, json={"model": "demo", "input": [791, 8415, 7731]})
    vectors = [item["embedding"] for item in answer["data"]]
    assert vectors[0] == vectors[2] != vectors[1]
    for vector in vectors:
        assert len(vector) == 256
        assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert answer["usage"]["prompt_tokens"] == 8
    assert [item["embedding"] for item in one.json()["data"]] == [vectors[0]]
    assert mock_upstream.exchanges == []


async def test_token_arrays_to_gemini_are_a_400_saying_how_to_send_text(
    mock_upstream: MockUpstream,
    gemini: MockGemini,  # noqa: F811
) -> None:
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "gem", "input": [[1, 2], [3]]})
    error = assert_error(response, 400)
    assert error["param"] == "input"
    assert "token" in error["message"]
    assert "check_embedding_ctx_length=False" in error["message"]
    assert gemini.exchanges == []


@pytest.mark.parametrize("empty", ["", [""], ["a", ""], [[]], []])
async def test_an_empty_input_is_a_400_saying_it_is_empty(
    mock_upstream: MockUpstream, empty: Any
) -> None:
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "demo", "input": empty})
    error = assert_error(response, 400)
    assert error["param"] == "input"
    assert "empty" in error["message"]
    assert "required" not in error["message"].lower()


@pytest.mark.parametrize("model", ["claude", "an/claude-sonnet-4-5"])
async def test_anthropic_without_a_key_is_the_400_of_no_embeddings(
    mock_upstream: MockUpstream, model: str
) -> None:
    raw = raw_config(openai_base=f"{mock_upstream.base_url}/v1")
    raw["providers"]["an"]["api_key"] = "${NO_SUCH_ANTHROPIC_KEY}"
    async with serve(make_config(raw)) as client:
        response = await client.post(EMBEDDINGS, json={"model": model, "input": "hi"})
    error = assert_error(response, 400)
    assert error["param"] == "model"
    assert "anthropic" in error["message"]
    assert "no embeddings" in error["message"]
