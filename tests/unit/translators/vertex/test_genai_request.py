"""tests/helpers/genai_request.py, the shape check the Vertex double and the Vertex transcripts
run on a Gemini body: google-genai's types, camelCase only, unknown fields refused. The
double itself refuses a misspelt body as Vertex does (400 INVALID_ARGUMENT)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.helpers.genai_request import body_problems
from tests.helpers.mock_vertex import MockVertex, model_path

USER = {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
DECLARATION = {"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {}}}
GOOD: dict[str, Any] = {
    "contents": [USER],
    "tools": [{"functionDeclarations": [DECLARATION]}],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "systemInstruction": {"parts": [{"text": "be brief"}]},
    "generationConfig": {"maxOutputTokens": 64, "thinkingConfig": {"thinkingBudget": 0}},
}


def test_a_body_as_the_rest_api_spells_it_passes() -> None:
    call = {"name": "get_weather", "args": {"city": "Paris"}}
    signed = {"role": "model", "parts": [{"functionCall": call, "thoughtSignature": "QQ=="}]}
    assert body_problems(GOOD | {"contents": [USER, signed]}) == []


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (GOOD | {"tools": [{"functionDeclaration": [DECLARATION]}]}, "tools.0.functionDeclaration"),
        (GOOD | {"tools": [{"function_declarations": [DECLARATION]}]}, "tools.0.function_decl"),
        (GOOD | {"generation_config": {}}, "generation_config"),
        (GOOD | {"generationConfig": {"maxTokens": 5}}, "generationConfig.maxTokens"),
        (GOOD | {"contents": [{"role": "user", "parts": [{"txt": "x"}]}]}, "contents.0.parts.0"),
        (GOOD | {"toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}, "an enum"),
    ],
)
def test_what_the_sdk_types_do_not_know_is_refused(body: dict[str, Any], where: str) -> None:
    problems = body_problems(body)
    assert problems
    assert problems[0].startswith(where), problems


def test_the_vertex_double_refuses_a_misspelt_field() -> None:
    with MockVertex(lambda token: token == "t") as vertex:
        path = model_path(
            vertex.project, "us-east5", "google", "gemini-2.5-flash", "generateContent"
        )
        body = GOOD | {"tools": [{"functionDeclaration": [DECLARATION]}]}
        answer = httpx.post(
            vertex.base_url + path, json=body, headers={"authorization": "Bearer t"}
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "functionDeclaration" in answer.json()["error"]["message"]
