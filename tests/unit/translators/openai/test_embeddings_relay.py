"""The embeddings answer relayed as its bytes: only `model` replaced, usage read for the
proxy's counts, and every case it cannot patch safely left to the full parse (None)."""

from __future__ import annotations

import base64
import struct

import orjson
import pytest

from app.translators.openai.embeddings import as_relayed

FLOATS = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 3, "total_tokens": 3},
}
BASE64 = {
    **FLOATS,
    "data": [
        {
            "object": "embedding",
            "index": 0,
            "embedding": base64.b64encode(struct.pack("<2f", 0.25, -0.5)).decode(),
        }
    ],
}


@pytest.mark.parametrize(("answer", "wanted"), [(FLOATS, "float"), (BASE64, "base64")])
def test_only_the_model_changes(answer: dict[str, object], wanted: str) -> None:
    relayed = as_relayed(orjson.dumps(answer, option=orjson.OPT_INDENT_2), 'my "model"\\', wanted)
    assert relayed is not None
    assert orjson.loads(relayed.raw) == {**answer, "model": 'my "model"\\'}
    assert dict(relayed) == {"usage": {"prompt_tokens": 3, "total_tokens": 3}}


@pytest.mark.parametrize(
    ("answer", "wanted"),
    [
        (FLOATS, "base64"),  # floats to a base64 request: converted by the full parse
        ({key: value for key, value in FLOATS.items() if key != "usage"}, "float"),
        ({**FLOATS, "extra": {"model": "x"}}, "float"),
        ({key: value for key, value in FLOATS.items() if key != "model"}, "float"),
    ],
)
def test_anything_else_is_parsed(answer: dict[str, object], wanted: str) -> None:
    assert as_relayed(orjson.dumps(answer), "m", wanted) is None
