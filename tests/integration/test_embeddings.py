"""POST /v1/embeddings in-process (issue 21, CONTRACT.md "Other OpenAI endpoints"): relayed to
an openai-kind upstream with only `model` replaced and the provider's key; translated to
Gemini's batchEmbedContents (checked by the validating mock); answered offline by the demo
kind; refused on anthropic. Keys, allow-lists, rpm, metrics, logs, retries and fallbacks are
chat's, so each is checked once here on an embeddings request. Upstreams are real sockets on
127.0.0.1 (tests/helpers/mock_upstream.py, tests/helpers/mock_gemini.py)."""

from __future__ import annotations

import base64
import json
import logging
import math
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from app.ops.logs import JsonFormatter
from tests.helpers.mock_gemini import MODEL as GEMINI_MODEL
from tests.helpers.mock_gemini import MockGemini, embed_path, gemini_embedding, gemini_error
from tests.helpers.mock_upstream import MockUpstream, Reply
from tests.helpers.request_log import LOG_FIELDS
from tests.integration.conftest import (
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    assert_error,
    make_config,
    raw_config,
    serve,
)
from tests.integration.test_team_keys_limits import ALICE_KEY, team_config, with_limits
from tests.integration.test_team_signals import samples, value

pytestmark = pytest.mark.anyio

EMBEDDINGS = "/v1/embeddings"
UPSTREAM_PATH = "/v1/embeddings"  # the openai provider's base_url ends in /v1
VECTORS = [[0.1, -0.2, 0.3], [0.25, 0.5, -0.75]]
UPSTREAM_USAGE = {"prompt_tokens": 7, "total_tokens": 7}


def openai_answer(
    vectors: list[list[float]], *, model: str = "text-embedding-3-small", usage: Any = None
) -> dict[str, Any]:
    """What OpenAI answers (floats), with `usage` only when given."""
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(vectors)
    ]
    answer: dict[str, Any] = {"object": "list", "data": data, "model": model}
    if usage is not None:
        answer["usage"] = usage
    return answer


def float32(values: list[float]) -> list[float]:
    """`values` as little-endian float32 holds them: what a base64 answer can carry."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def decoded(embedding: str) -> list[float]:
    raw = base64.b64decode(embedding)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def config(upstream: MockUpstream, gemini: MockGemini | None = None, **router: Any) -> Any:
    """The usual providers, with the openai one on the mock, an embeddings model on it (with a
    fallback to another), and Gemini when given."""
    raw = raw_config(openai_base=f"{upstream.base_url}/v1")
    raw["router"] |= router
    raw["models"] += [
        {
            "name": "embed",
            "provider": "oa",
            "model": "text-embedding-3-small",
            "fallbacks": ["embed-big"],
        },
        {"name": "embed-big", "provider": "oa", "model": "text-embedding-3-large"},
    ]
    if gemini is not None:
        raw["providers"]["gm"] = {
            "kind": "gemini",
            "base_url": gemini.base_url,
            "api_key": GEMINI_KEY,
        }
        raw["models"].append({"name": "gem", "provider": "gm", "model": GEMINI_MODEL})
    return make_config(raw)


@pytest.fixture
def gemini() -> Iterator[MockGemini]:
    server = MockGemini(GEMINI_KEY)
    with server:  # (MockUpstream.__enter__ is typed as the base class)
        yield server


# --- openai kind: relayed ------------------------------------------------------------------


async def test_openai_kind_relays_the_body_with_only_the_model_replaced(
    mock_upstream: MockUpstream,
) -> None:
    mock_upstream.add(Reply(json=openai_answer(VECTORS, usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    body = {
        "model": "embed",
        "input": ["first text", "second text"],
        "encoding_format": "float",
        "dimensions": 3,
        "user": "u-1",
    }
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json=body)

    assert response.status_code == 200, response.text
    (sent,) = mock_upstream.requests(UPSTREAM_PATH)
    assert sent.body == {**body, "model": "text-embedding-3-small"}
    assert sent.headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert CLIENT_KEY not in json.dumps(sent.headers)
    answer = response.json()
    assert answer["object"] == "list"
    assert answer["model"] == "embed"  # the configured name, not the upstream's
    assert [item["embedding"] for item in answer["data"]] == VECTORS
    assert [item["index"] for item in answer["data"]] == [0, 1]
    assert answer["usage"] == UPSTREAM_USAGE
    assert response.headers["x-toolrelay-model"] == "embed"


async def test_token_arrays_are_relayed_as_they_are_to_an_openai_upstream(
    mock_upstream: MockUpstream,
) -> None:
    mock_upstream.add(Reply(json=openai_answer(VECTORS[:1], usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "embed", "input": [[1, 2, 3]]})
    assert response.status_code == 200, response.text
    assert mock_upstream.requests(UPSTREAM_PATH)[0].body["input"] == [[1, 2, 3]]


async def test_base64_is_made_here_when_the_upstream_answered_floats(
    mock_upstream: MockUpstream,
) -> None:
    """Some compatible servers ignore `encoding_format`; the client asked for base64 (the
    openai SDK's default) and gets it."""
    mock_upstream.add(Reply(json=openai_answer(VECTORS, usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    body = {"model": "embed", "input": ["a", "b"], "encoding_format": "base64"}
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json=body)

    assert response.status_code == 200, response.text
    assert mock_upstream.requests(UPSTREAM_PATH)[0].body["encoding_format"] == "base64"
    embeddings = [item["embedding"] for item in response.json()["data"]]
    assert all(isinstance(embedding, str) for embedding in embeddings)
    assert [decoded(embedding) for embedding in embeddings] == [float32(v) for v in VECTORS]


async def test_a_base64_answer_from_the_upstream_is_kept_as_it_is(
    mock_upstream: MockUpstream,
) -> None:
    packed = base64.b64encode(struct.pack("<3f", *VECTORS[0])).decode()
    upstream_answer = openai_answer([], usage=UPSTREAM_USAGE)
    upstream_answer["data"] = [{"object": "embedding", "index": 0, "embedding": packed}]
    mock_upstream.add(Reply(json=upstream_answer), UPSTREAM_PATH)
    body = {"model": "embed", "input": "a", "encoding_format": "base64"}
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json=body)
    assert response.json()["data"][0]["embedding"] == packed


async def test_usage_is_estimated_when_the_upstream_gives_none(
    mock_upstream: MockUpstream,
) -> None:
    mock_upstream.add(Reply(json=openai_answer(VECTORS)), UPSTREAM_PATH)
    texts = ["twelve chars", "x" * 10]  # 3 and 3 tokens at four characters a token
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "embed", "input": texts})
    assert response.json()["usage"] == {"prompt_tokens": 6, "total_tokens": 6}


async def test_an_upstream_error_comes_back_in_openai_shape(mock_upstream: MockUpstream) -> None:
    refusal = {"message": "too long", "type": "invalid_request_error", "param": "input"}
    mock_upstream.add(Reply(400, json={"error": {**refusal, "code": None}}), UPSTREAM_PATH)
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "embed", "input": "a"})
    error = assert_error(response, 400)
    assert error["param"] == "input"
    assert len(mock_upstream.requests(UPSTREAM_PATH)) == 1  # a client error is not retried


async def test_a_5xx_is_retried_then_falls_back_to_another_model(
    mock_upstream: MockUpstream,
) -> None:
    failure = Reply(503, json={"error": {"message": "overloaded", "type": "server_error"}})
    for _ in range(2):  # the first attempt and one retry
        mock_upstream.add(failure, UPSTREAM_PATH)
    mock_upstream.add(Reply(json=openai_answer(VECTORS[:1], usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    async with serve(config(mock_upstream, retries=1, backoff=0)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "embed", "input": "hello"})

    assert response.status_code == 200, response.text
    assert response.headers["x-toolrelay-model"] == "embed-big"
    models = [exchange.body["model"] for exchange in mock_upstream.requests(UPSTREAM_PATH)]
    assert models == ["text-embedding-3-small"] * 2 + ["text-embedding-3-large"]
    assert {e.body["input"] for e in mock_upstream.requests(UPSTREAM_PATH)} == {"hello"}
    assert response.json()["model"] == "embed-big"
    assert response.json()["data"][0]["embedding"] == VECTORS[0]


# --- gemini kind: batchEmbedContents -------------------------------------------------------


async def test_gemini_kind_sends_batch_embed_contents_in_order(
    mock_upstream: MockUpstream, gemini: MockGemini
) -> None:
    texts = ["alpha", "beta", "gamma"]
    body = {"model": "gem", "input": texts, "dimensions": 5, "encoding_format": "float"}
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json=body)

    assert response.status_code == 200, response.text
    (sent,) = gemini.embed_requests()
    assert sent.path == embed_path(GEMINI_MODEL)
    assert sent.headers["x-goog-api-key"] == GEMINI_KEY
    assert "key=" not in sent.path
    assert CLIENT_KEY not in json.dumps(sent.headers)
    assert sent.body == {
        "requests": [
            {
                "model": f"models/{GEMINI_MODEL}",
                "content": {"parts": [{"text": text}]},
                "outputDimensionality": 5,
            }
            for text in texts
        ]
    }
    answer = response.json()
    assert answer["model"] == "gem"
    assert [item["index"] for item in answer["data"]] == [0, 1, 2]
    expected = [gemini_embedding(text, {"outputDimensionality": 5}) for text in texts]
    assert [item["embedding"] for item in answer["data"]] == expected
    assert answer["usage"] == {"prompt_tokens": 5, "total_tokens": 5}  # 2 + 1 + 2, estimated


async def test_gemini_kind_takes_one_string_and_answers_base64(
    mock_upstream: MockUpstream, gemini: MockGemini
) -> None:
    body = {"model": "gem", "input": "just one", "encoding_format": "base64"}
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json=body)
    assert response.status_code == 200, response.text
    (sent,) = gemini.embed_requests()
    assert sent.body["requests"] == [
        {"model": f"models/{GEMINI_MODEL}", "content": {"parts": [{"text": "just one"}]}}
    ]
    (item,) = response.json()["data"]
    assert decoded(item["embedding"]) == float32(gemini_embedding("just one"))


async def test_token_arrays_are_refused_for_gemini_naming_input(
    mock_upstream: MockUpstream, gemini: MockGemini
) -> None:
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "gem", "input": [[1, 2, 3]]})
    error = assert_error(response, 400)
    assert error["param"] == "input"
    assert "token" in error["message"]
    assert gemini.exchanges == []


async def test_a_gemini_error_comes_back_in_openai_shape(
    mock_upstream: MockUpstream, gemini: MockGemini
) -> None:
    refusal = gemini_error(400, "INVALID_ARGUMENT", "text too long")
    gemini.add(Reply(400, json=refusal), embed_path(GEMINI_MODEL))
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "gem", "input": "a"})
    error = assert_error(response, 400)
    assert "text too long" in error["message"]


async def test_a_gemini_answer_missing_an_embedding_is_an_upstream_error(
    mock_upstream: MockUpstream, gemini: MockGemini
) -> None:
    short = {"embeddings": [{"values": [0.5]}]}
    gemini.add(Reply(json=short), embed_path(GEMINI_MODEL))
    async with serve(config(mock_upstream, gemini)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "gem", "input": ["a", "b"]})
    assert response.status_code >= 500
    assert_error(response, response.status_code)


# --- demo kind: offline ------------------------------------------------------------------


async def test_demo_vectors_are_deterministic_unit_length_256_by_default(
    mock_upstream: MockUpstream,
) -> None:
    body = {"model": "demo", "input": ["the cat sat", "a dog ran", "the cat sat"]}
    async with serve(config(mock_upstream)) as client:
        first = (await client.post(EMBEDDINGS, json=body)).json()
        again = (await client.post(EMBEDDINGS, json=body)).json()

    vectors = [item["embedding"] for item in first["data"]]
    assert [item["embedding"] for item in again["data"]] == vectors
    assert vectors[0] == vectors[2]
    assert vectors[0] != vectors[1]
    for vector in vectors:
        assert len(vector) == 256
        assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert first["model"] == "demo"
    assert first["usage"]["prompt_tokens"] > 0
    assert mock_upstream.exchanges == []


async def test_demo_honours_dimensions_and_base64(mock_upstream: MockUpstream) -> None:
    async with serve(config(mock_upstream)) as client:
        floats = await client.post(
            EMBEDDINGS, json={"model": "demo", "input": "hello world", "dimensions": 32}
        )
        packed = await client.post(
            EMBEDDINGS,
            json={
                "model": "demo",
                "input": "hello world",
                "dimensions": 32,
                "encoding_format": "base64",
            },
        )
    (vector,) = [item["embedding"] for item in floats.json()["data"]]
    assert len(vector) == 32
    assert math.isclose(math.fsum(v * v for v in vector), 1.0, rel_tol=1e-9)
    assert decoded(packed.json()["data"][0]["embedding"]) == float32(vector)


async def test_demo_texts_sharing_words_are_closer_than_unrelated_ones(
    mock_upstream: MockUpstream,
) -> None:
    texts = ["paris weather today", "weather in paris", "quarterly tax filing"]
    async with serve(config(mock_upstream)) as client:
        answer = (await client.post(EMBEDDINGS, json={"model": "demo", "input": texts})).json()
    query, near, far = (item["embedding"] for item in answer["data"])
    similarity = [sum(a * b for a, b in zip(query, other, strict=True)) for other in (near, far)]
    assert similarity[0] > similarity[1]


# --- refusals ------------------------------------------------------------------------------


async def test_anthropic_has_no_embeddings_400_naming_model_and_kind(
    mock_upstream: MockUpstream,
) -> None:
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "claude", "input": "hi"})
    error = assert_error(response, 400)
    assert error["param"] == "model"
    assert "claude" in error["message"]
    assert "anthropic" in error["message"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "embed", "input": "a", "encoding_format": "int8"}, "encoding_format"),
        ({"model": "embed", "input": "a", "dimensions": 0}, "dimensions"),
        ({"model": "embed", "input": "a", "dimensions": "256"}, "dimensions"),
        ({"model": "embed", "input": "a", "dimensions": True}, "dimensions"),
        ({"model": "embed"}, "input"),
        ({"model": "embed", "input": ""}, "input"),
        ({"model": "embed", "input": []}, "input"),
        ({"input": "a"}, "model"),
        ({"model": "", "input": "a"}, "model"),
        ({"model": "demo", "input": [1.5]}, "input"),
    ],
)
async def test_a_bad_body_is_a_400_naming_its_param(
    mock_upstream: MockUpstream, body: dict[str, Any], param: str
) -> None:
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json=body)
    error = assert_error(response, 400)
    assert error["param"] == param
    assert mock_upstream.exchanges == []


async def test_a_body_that_is_not_json_is_a_400(mock_upstream: MockUpstream) -> None:
    async with serve(config(mock_upstream)) as client:
        response = await client.post(
            EMBEDDINGS, content=b"{nope", headers={"content-type": "application/json"}
        )
    assert_error(response, 400)


async def test_an_unknown_model_is_a_404(mock_upstream: MockUpstream) -> None:
    async with serve(config(mock_upstream)) as client:
        response = await client.post(EMBEDDINGS, json={"model": "no-such", "input": "a"})
    error = assert_error(response, 404)
    assert (error["code"], error["param"]) == ("model_not_found", "model")


async def test_without_a_key_it_is_a_401(mock_upstream: MockUpstream) -> None:
    async with serve(config(mock_upstream), client_key=None) as client:
        response = await client.post(EMBEDDINGS, json={"model": "demo", "input": "a"})
    assert_error(response, 401)


# --- keys, limits, metrics, logs -----------------------------------------------------------


async def test_the_allow_list_refuses_a_model_the_key_may_not_use(
    mock_upstream: MockUpstream,
) -> None:
    """Alice may use `mini`, `demo` and `oa/*`, not `big`."""
    mock_upstream.add(Reply(json=openai_answer(VECTORS[:1], usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        refused = await client.post(EMBEDDINGS, json={"model": "big", "input": "a"})
        by_provider = await client.post(EMBEDDINGS, json={"model": "oa/emb-x", "input": "a"})
        allowed = await client.post(EMBEDDINGS, json={"model": "demo", "input": "a"})
    error = assert_error(refused, 403)
    assert (error["code"], error["param"]) == ("model_not_allowed", "model")
    assert by_provider.status_code == 200, by_provider.text
    assert mock_upstream.requests(UPSTREAM_PATH)[0].body["model"] == "emb-x"
    assert allowed.status_code == 200


async def test_rpm_limits_apply_and_metrics_and_the_log_line_count_embeddings(
    mock_upstream: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    mock_upstream.add(Reply(json=openai_answer(VECTORS, usage=UPSTREAM_USAGE)), UPSTREAM_PATH)
    raw = with_limits(team_config(mock_upstream), "alice", rpm=2)
    body = {"model": "mini", "input": ["first", "second"]}
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        caplog.clear()
        answered = await client.post(EMBEDDINGS, json=body)
        records = [r for r in caplog.records if r.name == "toolrelay.http"]
        demo = await client.post(EMBEDDINGS, json={"model": "demo", "input": "x"})
        limited_mini = await client.post(EMBEDDINGS, json=body)
        found = samples((await client.get("/metrics")).text)

    assert answered.status_code == 200, answered.text
    assert demo.status_code == 200, demo.text
    error = assert_error(limited_mini, 429)
    assert error["code"] == "rate_limit_exceeded"
    assert len(mock_upstream.requests(UPSTREAM_PATH)) == 1
    labels = {"model": "mini", "provider": "oa", "key": "alice"}
    assert value(found, "toolrelay_requests_total", **labels, status="200") == 1
    assert value(found, "toolrelay_tokens_total", **labels, type="prompt") == 7
    refused = {"model": "mini", "provider": "none", "key": "alice", "status": "429"}
    assert value(found, "toolrelay_requests_total", **refused) == 1
    assert value(found, "toolrelay_rate_limited_total", model="mini", key="alice", limit="rpm") == 1
    demo_labels = {"model": "demo", "provider": "demo", "key": "alice", "status": "200"}
    assert value(found, "toolrelay_requests_total", **demo_labels) == 1

    (record,) = records
    line = json.loads(JsonFormatter().format(record))
    assert set(line) >= LOG_FIELDS
    assert (line["key"], line["model"], line["provider"], line["status"]) == (
        "alice",
        "mini",
        "oa",
        200,
    )
    assert line["prompt_tokens"] == 7
    assert line["attempts"] == 1
    text = json.dumps(line) + record.getMessage()
    assert "first" not in text
    assert ALICE_KEY not in text
    assert record.levelno == logging.INFO
