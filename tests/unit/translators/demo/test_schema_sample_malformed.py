"""schema_sample on schemas jsonschema cannot judge: no crash, no fetch, still a value."""

from __future__ import annotations

import socket
import urllib.request
from typing import Any

import pytest

from app.translators.demo.schema_sample import sample

MALFORMED: dict[str, Any] = {
    "string-for-schema": {"type": "object", "properties": {"a": "string"}},
    "unknown-type": {"type": "object", "properties": {"a": {"type": "text", "default": 1}}},
    "length-as-string": {"properties": {"a": {"minLength": "3", "enum": ["x", "yy"]}}},
    "unresolvable-ref": {"properties": {"a": {"$ref": "#/$defs/none", "enum": ["x"]}}},
    "zero-multiple": {"properties": {"a": {"type": "integer", "multipleOf": 0}}},
    "ecma-pattern": {"properties": {"a": {"type": "string", "pattern": r"\p{L}+"}}},
    "ref-cycle": {"anyOf": [{"$ref": "#"}, {"type": "object"}]},
    "schema-not-a-string": {"$schema": ["x"], "properties": {"a": {"type": "integer"}}},
    "id-not-a-string": {"$id": 5, "properties": {"a": {"enum": ["x", "y"]}}},
    "not-an-object": ["type", "object"],
}


@pytest.mark.parametrize("schema", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_schema_still_gives_a_value(schema: Any) -> None:
    assert sample(schema) == sample(schema)


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schemas/city.json",
        "http://example.com/schemas/city.json#/$defs/name",
        "city.json",
    ],
)
def test_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch, ref: str) -> None:
    calls: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        raise OSError("no network in the sampler")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    schema = {
        "$id": "https://example.com/schemas/tool.json",
        "type": "object",
        "properties": {"city": {"$ref": ref, "default": "Paris"}},
        "anyOf": [{"required": ["city"]}],
    }
    value = sample(schema)
    assert calls == []
    assert isinstance(value, dict)
    assert "city" in value
