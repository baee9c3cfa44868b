"""What the Gemini API refuses in a generateContent / streamGenerateContent body's shape, by
google-genai's own types (the SDK's Content, Tool, ToolConfig, GenerationConfig,
SafetySetting, which forbid unknown fields): every field name as the REST API spells it
(camelCase only: the SDK's models also take their Python names, which the API does not),
every value of the type the SDK declares. The body's top level is not an SDK type (the SDK
builds it from GenerateContentConfig), so it is declared here with the SDK's types for its
members, as Vertex's and AI Studio's REST reference list them.

gemini_rules.py checks what no shape says (turn order, pairing, signatures, schema keywords);
this checks the shape, so a misspelt field (`functionDeclaration`) cannot pass both our code
and our own rules."""

from __future__ import annotations

import warnings
from typing import Any

import orjson
from google.genai import types
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class GenerateContentBody(BaseModel):
    """The REST body: `contents`, `tools`, `toolConfig`, `systemInstruction`,
    `generationConfig`, `safetySettings`, `cachedContent`, `labels`."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel)

    contents: list[types.Content]
    tools: list[types.Tool] | None = None
    tool_config: types.ToolConfig | None = None
    system_instruction: types.Content | None = None
    generation_config: types.GenerationConfig | None = None
    safety_settings: list[types.SafetySetting] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None


def body_problems(body: Any) -> list[str]:
    """Each field the SDK's types refuse, as `location: message`; [] when the shape is right.
    Validated from JSON (so `thoughtSignature` is base64, as on the wire) by alias only. An
    enum value the SDK does not know it only warns about (for newer servers' values); the
    API refuses it, so here it is a problem."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            GenerateContentBody.model_validate_json(
                orjson.dumps(body), by_alias=True, by_name=False
            )
    except UserWarning as warning:
        return [f"an enum value the API does not know: {warning}"]
    except ValidationError as error:
        return [
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors()
        ]
    return []
