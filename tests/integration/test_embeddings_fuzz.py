"""Any POST /v1/embeddings body, however malformed, through the in-process app (issue 29's new
input shapes: token-id arrays, lists of them, empty inputs) on the demo kind, an openai-kind and
a gemini-kind upstream, and an anthropic model (no embeddings): the answer is never a 5xx,
every error is OpenAI's shape, and a 200 has one vector per input."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.conftest import GEMINI_KEY, make_config, raw_config, serve

VECTOR = [0.25, -0.5, 0.75]
STATUSES: list[int] = []


def upstream(request: httpx.Request) -> httpx.Response:
    """An openai-kind embeddings answer, or Gemini's batchEmbedContents: one vector each."""
    body = json.loads(request.content)
    if request.url.path.endswith(":batchEmbedContents"):
        return httpx.Response(
            200, json={"embeddings": [{"values": VECTOR}] * len(body["requests"])}
        )
    given = body["input"]
    count = len(given) if isinstance(given, list) and given and not isinstance(given[0], int) else 1
    data = [{"object": "embedding", "index": n, "embedding": VECTOR} for n in range(count)]
    usage = {"prompt_tokens": 3, "total_tokens": 3}
    return httpx.Response(200, json={"object": "list", "data": data, "model": "m", "usage": usage})


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
junk = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
token_ids = st.lists(st.integers(-5, 200_000), max_size=6)
inputs = st.one_of(
    st.text(min_size=1, max_size=20),
    st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4),
    st.lists(st.text(max_size=10), max_size=4),
    token_ids,
    st.lists(token_ids, max_size=4),
    junk,
)
ordinary = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["demo", "mini", "gem"] * 3 + ["claude", "nope", ""]),
        "input": inputs,
    },
    optional={
        "dimensions": st.one_of(st.integers(1, 512), st.integers(-3, 5000), junk),
        "encoding_format": st.one_of(st.sampled_from(["float", "base64"]), junk),
        "user": junk,
    },
)
bodies = st.one_of(ordinary, ordinary, ordinary, junk)  # mostly shaped like a request


def check(answer: httpx.Response, sent: Any) -> None:
    assert answer.status_code < 500, answer.text
    body = answer.json()
    if answer.status_code != 200:
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"message", "type", "param", "code"}, body
        assert isinstance(body["error"]["message"], str)
        assert body["error"]["message"]
        return
    given = sent["input"]
    several = isinstance(given, list) and given and not isinstance(given[0], int)
    assert len(body["data"]) == (len(given) if several else 1), (sent, body)


def test_no_embeddings_body_is_a_5xx_and_every_error_is_openais_shape() -> None:
    raw = raw_config()
    raw["providers"]["gm"] = {
        "kind": "gemini",
        "base_url": "http://gemini.test",
        "api_key": GEMINI_KEY,
    }
    raw["models"] += [{"name": "gem", "provider": "gm", "model": "gemini-embedding-001"}]
    STATUSES.clear()
    with asyncio.Runner() as runner:
        context = serve(make_config(raw), transport=httpx.MockTransport(upstream))
        client = runner.run(context.__aenter__())
        try:

            @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=bodies)
            def send(body: Any) -> None:
                answer = runner.run(client.post("/v1/embeddings", json=body))
                STATUSES.append(answer.status_code)
                check(answer, body)

            send()
        finally:
            runner.run(context.__aexit__(None, None, None))
    # Most bodies are refused (a junk field refuses the whole body); enough must be answered to
    # show the well-formed ones reach the demo and both upstreams.
    assert STATUSES.count(200) >= len(STATUSES) // 40, STATUSES
