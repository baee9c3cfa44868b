"""The mock Gemini's request check refuses what the real API refuses, so the tests that rely on
it (transcripts, integration, e2e) prove something when it passes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.gemini_rules import (
    ALTERNATE,
    CALL_AFTER_USER,
    MISSING_SIGNATURE,
    RESPONSE_COUNT,
    request_problems,
)

SIGNATURE = "c2lnbmF0dXJl"
CALL = {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": SIGNATURE}
ISSUED = {("f", '{"x": 1}'): SIGNATURE}
VALID: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "Be terse."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "Calling."}, CALL]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"r": 1}}}]},
    ],
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "f",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"x": {"type": "INTEGER"}},
                        "required": ["x"],
                    },
                }
            ]
        }
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
    "generationConfig": {"temperature": 0.1, "stopSequences": ["x"]},
}

Change = Callable[[dict[str, Any]], None]


def _parameters(body: dict[str, Any]) -> dict[str, Any]:
    parameters: dict[str, Any] = body["tools"][0]["functionDeclarations"][0]["parameters"]
    return parameters


def _x(body: dict[str, Any]) -> dict[str, Any]:
    x: dict[str, Any] = _parameters(body)["properties"]["x"]
    return x


def call_part(body: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = body["contents"][1]["parts"][1]
    return part


def response_part(body: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = body["contents"][2]["parts"][0]
    return part


CHANGES: list[tuple[str, Change, str]] = [
    ("unknown-field", lambda b: b.update(model="x"), 'Unknown name "model"'),
    (
        "additionalProperties",
        lambda b: _parameters(b).update(additionalProperties=False),
        'Unknown name "additionalProperties"',
    ),
    ("ref", lambda b: _x(b).update({"$ref": "#/$defs/x"}), 'Unknown name "$ref"'),
    ("defs", lambda b: _parameters(b).update({"$defs": {}}), 'Unknown name "$defs"'),
    ("const", lambda b: _x(b).update(const=1), 'Unknown name "const"'),
    ("schema", lambda b: _parameters(b).update({"$schema": "x"}), 'Unknown name "$schema"'),
    ("type-list", lambda b: _x(b).update(type=["INTEGER", "NULL"]), "cannot start list"),
    ("untyped", lambda b: _x(b).pop("type"), "must be specified"),
    ("required-undefined", lambda b: _parameters(b)["required"].append("y"), "not defined"),
    ("array-items", lambda b: _x(b).update(type="ARRAY"), "items: missing field"),
    ("enum-integer", lambda b: _x(b).update(enum=[1, 2]), "enum only allowed for STRING"),
    ("properties-on-string", lambda b: _x(b).update(properties={}), "only allowed for OBJECT"),
    ("format", lambda b: _x(b).update(type="STRING", format="email"), "unsupported format"),
    ("empty-root", lambda b: _parameters(b).update(properties={}, required=[]), "non-empty"),
    ("bad-name", lambda b: b["tools"][0]["functionDeclarations"][0].update(name="1f"), "name"),
    ("role", lambda b: b["contents"][0].update(role="system"), "valid role"),
    ("empty-parts", lambda b: b["contents"][0].update(parts=[]), "must not be empty"),
    ("empty-text", lambda b: b["contents"][0]["parts"][0].update(text=""), "empty text"),
    ("two-data-fields", lambda b: call_part(b).update(text="x"), "exactly one data field"),
    ("alternation", lambda b: b["contents"].insert(1, b["contents"][0]), ALTERNATE),
    ("call-first", lambda b: b["contents"].pop(0), CALL_AFTER_USER),
    ("missing-response", lambda b: b["contents"][2]["parts"].clear(), RESPONSE_COUNT),
    (
        "extra-response",
        lambda b: b["contents"][2]["parts"].append(dict(response_part(b))),
        RESPONSE_COUNT,
    ),
    ("missing-signature", lambda b: call_part(b).pop("thoughtSignature"), MISSING_SIGNATURE),
    (
        "altered-signature",
        lambda b: call_part(b).update(thoughtSignature="eA=="),
        MISSING_SIGNATURE,
    ),
    (
        "string-response",
        lambda b: response_part(b)["functionResponse"].update(response="ok"),
        "must be an object",
    ),
    (
        "allowed-names-without-any",
        lambda b: b["toolConfig"]["functionCallingConfig"].update(mode="AUTO"),
        "only be set when mode is ANY",
    ),
    (
        "unknown-allowed-name",
        lambda b: b["toolConfig"]["functionCallingConfig"].update(allowedFunctionNames=["g"]),
        "not a declared function",
    ),
    (
        "stop-sequences",
        lambda b: b["generationConfig"].update(stopSequences=list("abcdef")),
        "at most 5",
    ),
    ("key-in-generation", lambda b: b["generationConfig"].update(max_tokens=3), "max_tokens"),
    (
        "json-schema-without-json-mime-type",
        lambda b: b["generationConfig"].update(responseJsonSchema={"type": "object"}),
        "response_json_schema needs response_mime_type application/json",
    ),
    (
        "both-schemas",
        lambda b: b["generationConfig"].update(
            responseMimeType="application/json",
            responseJsonSchema={"type": "object"},
            responseSchema={"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
        ),
        "cannot both be set",
    ),
    ("system-part", lambda b: b["systemInstruction"]["parts"].append({"text": ""}), "text parts"),
]


def test_the_valid_request_passes() -> None:
    assert request_problems(VALID, ISSUED) == []


def test_a_plain_json_schema_with_refs_passes() -> None:
    body = copy.deepcopy(VALID)
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}
    body["generationConfig"].update(responseMimeType="application/json", responseJsonSchema=schema)
    assert request_problems(body, ISSUED) == []


@pytest.mark.parametrize(
    ("change", "problem"), [(c, p) for _, c, p in CHANGES], ids=[n for n, _, _ in CHANGES]
)
def test_what_gemini_refuses_is_refused(change: Change, problem: str) -> None:
    body = copy.deepcopy(VALID)
    change(body)
    problems = request_problems(body, ISSUED)
    assert any(problem in line for line in problems), problems


def test_a_signature_gemini_never_issued_is_refused() -> None:
    assert any("not valid" in line for line in request_problems(VALID, {}))
