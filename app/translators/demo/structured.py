"""The demo model's structured output: with `response_format` asking for JSON, the answer's
content is JSON a strict client can parse (CONTRACT.md, `response_format`).

- `json_schema`: a value sampled from `json_schema.schema` (schema_sample: `$ref`/`$defs`,
  `anyOf`/`oneOf`, `const`, `enum`, bounds, `required`, closed objects), which validates
  against it, so `client.chat.completions.parse(response_format=Model)` gets a `Model`;
- `json_object`: `{"answer": TEXT}`, the text the demo would otherwise have said;
- `text`, absent or unknown: None, the demo answers in prose.

Pure and deterministic, like the rest of the demo.
"""

from __future__ import annotations

import json
from typing import Any

from app.translators.demo.schema_sample import sample

ANSWER_KEY = "answer"


def structured_text(request: dict[str, Any], *, said: str, prose: str) -> str | None:
    """The JSON the answer's content holds, or None when no JSON is asked for.

    `said` (the user's last words) steers free-text and place properties of the sample, as it
    does a tool's arguments; `prose` is what the demo would have said, the `json_object`
    answer.
    """
    kind = _format_type(request)
    if kind == "json_object":
        return _dumps({ANSWER_KEY: prose})
    if kind != "json_schema":
        return None
    return _dumps(_schema_sample(_schema(request), said))


def _schema_sample(schema: Any, said: str) -> Any:
    """A value valid against `schema`; an absent or empty schema allows anything, and an
    object is the most useful such value."""
    if schema is None or schema is True or schema == {}:
        return {ANSWER_KEY: said} if said else {}
    return sample(schema, hint=said or None)


def _schema(request: dict[str, Any]) -> Any:
    response_format = request.get("response_format")
    assert isinstance(response_format, dict)
    json_schema = response_format.get("json_schema")
    return json_schema.get("schema") if isinstance(json_schema, dict) else None


def _format_type(request: dict[str, Any]) -> str | None:
    response_format = request.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    return kind if isinstance(kind, str) else None


def _dumps(value: Any) -> str:
    # json, not orjson: a schema's bounds may ask for integers beyond 64 bits.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
