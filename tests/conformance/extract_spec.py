"""Extracts, from OpenAI's published OpenAPI spec, the schemas our answers must match, into
tests/conformance/openai_spec_subset.json (issue 20 part 5). The subset is kept in the repo so
the conformance checks run offline and fast; this script is how it was made and how to refresh
it when OpenAI publishes a new spec.

Source: https://github.com/openai/openai-openapi, file `openapi.json` (the same spec as
`openapi.yaml`, as JSON), at the commit recorded in the subset's `source.commit`.

Re-run:

    git clone https://github.com/openai/openai-openapi /tmp/openai-openapi
    .venv/bin/python tests/conformance/extract_spec.py /tmp/openai-openapi

(the argument is a checkout, or a bare git directory: the file is read from its HEAD with
`git show`). Then run tests/conformance and review the subset's diff: a new required field is a
deviation to fix in app/, not a test to loosen.

What is kept: the root schemas below and every component they reference, transitively, with
the spec's own text except its prose (descriptions, examples, `x-oai*` documentation keys),
which validation never reads and which would make the file several times larger.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOTS = (
    "CreateChatCompletionResponse",
    "CreateChatCompletionStreamResponse",
    "Response",
    "ResponseStreamEvent",
)
"""Chat Completions' answer and chunk; the Responses API's object and stream events."""
EXAMPLE_OPERATIONS = (("/responses/{response_id}", "delete"),)
"""Answers the spec gives no schema, only an example (`x-oaiMeta.examples.response`): kept by
operationId, and our answer must have the example's fields and constant values."""

SPEC_FILE = "openapi.json"
REPO = "openai/openai-openapi"
OUT = Path(__file__).with_name("openai_spec_subset.json")
REF_PREFIX = "#/components/schemas/"
PROSE_KEYS = frozenset({"description", "example", "examples", "x-oaiMeta", "x-oaiTypeLabel"})
"""Annotations, not assertions: dropped wherever they are a schema's keyword."""
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
"""Keywords whose value maps names to schemas: their keys are names, never keywords, so a
property called `description` is kept."""


def read_spec(checkout: Path) -> tuple[dict[str, Any], str]:
    """The spec at the checkout's HEAD, and that commit's id."""
    git = ["git", "-C", str(checkout)]
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    text = subprocess.run(
        [*git, "show", f"HEAD:{SPEC_FILE}"], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(text), commit


def referenced(schema: Any) -> set[str]:
    """The component names `schema` refers to directly."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                if not value.startswith(REF_PREFIX):
                    raise ValueError(f"a reference outside components/schemas: {value}")
                found.add(value.removeprefix(REF_PREFIX))
            else:
                found |= referenced(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= referenced(item)
    return found


def closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> list[str]:
    """The roots and every component reachable from them, sorted."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending.extend(referenced(schemas[name]) - seen)
    return sorted(seen)


def without_prose(schema: Any) -> Any:
    """The schema with its documentation keywords removed (see PROSE_KEYS, SCHEMA_MAPS)."""
    if isinstance(schema, list):
        return [without_prose(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key in PROSE_KEYS:
            continue
        if key in SCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: without_prose(item) for name, item in value.items()}
        else:
            kept[key] = without_prose(value)
    return kept


def subset(spec: dict[str, Any], commit: str) -> dict[str, Any]:
    schemas = spec["components"]["schemas"]
    names = closure(schemas, ROOTS)
    return {
        "source": {
            "repository": f"https://github.com/{REPO}",
            "file": SPEC_FILE,
            "commit": commit,
            "openapi": spec["openapi"],
            "info_version": spec.get("info", {}).get("version"),
            "roots": list(ROOTS),
            "extracted_by": "tests/conformance/extract_spec.py",
        },
        "components": {"schemas": {name: without_prose(schemas[name]) for name in names}},
        "examples": dict(_example(spec, path, method) for path, method in EXAMPLE_OPERATIONS),
    }


def _example(spec: dict[str, Any], path: str, method: str) -> tuple[str, Any]:
    operation = spec["paths"][path][method]
    return operation["operationId"], json.loads(operation["x-oaiMeta"]["examples"]["response"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help=f"a git checkout (or git dir) of {REPO}")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    spec, commit = read_spec(args.checkout)
    extracted = subset(spec, commit)
    args.out.write_text(json.dumps(extracted, indent=1, sort_keys=True) + "\n")
    count = len(extracted["components"]["schemas"])
    sys.stderr.write(f"{count} schemas from {REPO}@{commit[:12]} -> {args.out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
