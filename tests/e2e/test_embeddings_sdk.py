"""The real `openai` SDK's `embeddings.create`, with only `base_url` changed, through a real proxy
process (issue 21): on an openai-kind mock, on the validating Gemini mock (batchEmbedContents
as Gemini checks it) and on the built-in demo kind, with the SDK's default encoding (base64,
little-endian float32) and with `encoding_format="float"`; anthropic refused. The vectors the
SDK hands back must be the ones the mocks sent (to float32 precision for base64)."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_gemini import MODEL as GEMINI_MODEL
from tests.helpers.mock_gemini import MockGemini, gemini_embedding
from tests.helpers.mock_upstream import MockUpstream, Reply

pytestmark = pytest.mark.e2e

UPSTREAM_PATH = "/v1/embeddings"
TEXTS = ["the cat sat on the mat", "a dog ran in the park"]
# Values float32 cannot hold exactly, so the base64 leg shows its rounding.
OPENAI_VECTORS = [[0.1, -0.2, 0.3, 1 / 3], [0.7, 0.11, -0.13, 2 / 3]]


def float32(values: list[float]) -> list[float]:
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def openai_answer(vectors: list[list[float]]) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(vectors)
    ]
    usage = {"prompt_tokens": 12, "total_tokens": 12}
    return {"object": "list", "data": data, "model": "text-embedding-3-small", "usage": usage}


@pytest.fixture(scope="module")
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def gemini() -> Iterator[MockGemini]:
    server = MockGemini(GEMINI_KEY)
    with server:  # (MockUpstream.__enter__ is typed as the base class)
        yield server


@pytest.fixture(scope="module")
def proxy(
    upstream: MockUpstream, gemini: MockGemini, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    config = keyed_config(
        f"""  oa:
    kind: openai
    base_url: {upstream.base_url}/v1
    api_key: {PROVIDER_KEY}
  gm:
    kind: gemini
    base_url: {gemini.base_url}
    api_key: {GEMINI_KEY}
  an:
    kind: anthropic
    base_url: {upstream.base_url}
    api_key: {ANTHROPIC_KEY}
  demo:
    kind: demo""",
        f"""  - {{name: embed, provider: oa, model: text-embedding-3-small}}
  - {{name: gem, provider: gm, model: {GEMINI_MODEL}}}
  - {{name: claude, provider: an, model: claude-sonnet-4-5, max_tokens: 1024}}
  - {{name: demo, provider: demo, model: demo}}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("embeddings-proxy")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


@pytest.fixture(autouse=True)
def _fresh_mocks(upstream: MockUpstream, gemini: MockGemini) -> None:
    upstream.reset()
    gemini.reset()


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_openai_kind(client: openai.OpenAI, upstream: MockUpstream, encoding: str) -> None:
    upstream.add(Reply(json=openai_answer(OPENAI_VECTORS)), UPSTREAM_PATH)
    if encoding == "float":
        result = client.embeddings.create(model="embed", input=TEXTS, encoding_format="float")
    else:
        result = client.embeddings.create(model="embed", input=TEXTS)  # the SDK asks base64

    (sent,) = upstream.requests(UPSTREAM_PATH)
    assert sent.body["model"] == "text-embedding-3-small"
    assert sent.body["input"] == TEXTS
    assert sent.body["encoding_format"] == encoding
    assert sent.headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert CLIENT_KEY not in json.dumps(sent.headers)
    vectors = [item.embedding for item in result.data]
    if encoding == "float":
        assert vectors == OPENAI_VECTORS
    else:
        assert vectors == [float32(vector) for vector in OPENAI_VECTORS]
    assert result.model == "embed"
    assert [item.index for item in result.data] == [0, 1]
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (12, 12)


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_gemini_kind(client: openai.OpenAI, gemini: MockGemini, encoding: str) -> None:
    texts = ["first", "second", "third"]
    if encoding == "float":
        result = client.embeddings.create(
            model="gem", input=texts, dimensions=16, encoding_format="float"
        )
    else:
        result = client.embeddings.create(model="gem", input=texts, dimensions=16)

    (sent,) = gemini.embed_requests()  # the mock answered it, so Gemini would have taken it
    assert [one["content"]["parts"][0]["text"] for one in sent.body["requests"]] == texts
    assert {one["outputDimensionality"] for one in sent.body["requests"]} == {16}
    sent_vectors = [gemini_embedding(text, {"outputDimensionality": 16}) for text in texts]
    vectors = [item.embedding for item in result.data]
    if encoding == "float":
        assert vectors == sent_vectors
    else:
        assert vectors == [float32(vector) for vector in sent_vectors]
    assert result.model == "gem"
    assert result.usage.prompt_tokens > 0


def test_gemini_kind_one_string_without_dimensions(
    client: openai.OpenAI, gemini: MockGemini
) -> None:
    result = client.embeddings.create(model="gem", input="only one", encoding_format="float")
    (sent,) = gemini.embed_requests()
    assert "outputDimensionality" not in sent.body["requests"][0]
    assert [item.embedding for item in result.data] == [gemini_embedding("only one")]


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_demo_kind(client: openai.OpenAI, encoding: str) -> None:
    def create(**extra: Any) -> list[list[float]]:
        if encoding == "float":
            extra["encoding_format"] = "float"
        result = client.embeddings.create(model="demo", input=TEXTS, **extra)
        assert result.model == "demo"
        return [item.embedding for item in result.data]

    vectors = create()
    assert create() == vectors  # the same text, the same vector
    assert [len(vector) for vector in vectors] == [256, 256]
    for vector in vectors:
        assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-6)
    assert [len(vector) for vector in create(dimensions=64)] == [64, 64]


def test_demo_base64_is_the_float_answer_in_float32(client: openai.OpenAI) -> None:
    floats = client.embeddings.create(model="demo", input="hello", encoding_format="float")
    packed = client.embeddings.create(model="demo", input="hello")
    assert packed.data[0].embedding == float32(floats.data[0].embedding)


def test_anthropic_is_refused(client: openai.OpenAI, upstream: MockUpstream) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.embeddings.create(model="claude", input="hi")
    assert "claude" in str(refused.value)
    assert "anthropic" in str(refused.value)
    assert upstream.exchanges == []
