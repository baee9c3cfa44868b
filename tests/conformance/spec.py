"""Validation of what the proxy answers against OpenAI's own published schemas (the subset in
openai_spec_subset.json, made by extract_spec.py), for the shared test helpers to call on every
body, chunk and event they read, so a deviation fails the test that produced it (issue 20 part
5).

The spec is OpenAPI 3.1, i.e. JSON Schema 2020-12, except for a few schemas still written in
3.0's style (`nullable: true`): those are rewritten, once at load time, to admit null. Each
validator is compiled once per schema name and cached; Responses stream events are checked
against the one event schema their `type` names (the spec's `anyOf` of 50-odd events would
otherwise be tried member by member and report only "not valid under any")."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SUBSET = Path(__file__).with_name("openai_spec_subset.json")
BASE_URI = "urn:openai-openapi"
REF_PREFIX = "#/components/schemas/"
DISABLE = "TOOLRELAY_SKIP_SPEC_CHECKS"
"""Set to 1 to turn the helpers' checks off (the direct conformance tests still run)."""

CHAT_COMPLETION = "CreateChatCompletionResponse"
CHAT_CHUNK = "CreateChatCompletionStreamResponse"
RESPONSE = "Response"
STREAM_EVENT = "ResponseStreamEvent"


class SpecViolation(AssertionError):
    """An answer that OpenAI's schema for it rejects; the message names the path and rule."""


def enabled() -> bool:
    return os.environ.get(DISABLE, "") in ("", "0")


def _nullable_to_2020(schema: Any) -> Any:
    """3.0's `nullable: true` as 2020-12: the schema, or null."""
    if isinstance(schema, list):
        return [_nullable_to_2020(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _nullable_to_2020(value) for key, value in schema.items()}
    if converted.pop("nullable", False) is True:
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


@cache
def _document() -> dict[str, Any]:
    subset = json.loads(SUBSET.read_text())
    return {"components": _nullable_to_2020(subset["components"]), "examples": subset["examples"]}


@cache
def _registry() -> Registry:
    resource = Resource.from_contents(_document(), default_specification=DRAFT202012)
    return Registry().with_resource(BASE_URI, resource)


@cache
def validator(name: str) -> Draft202012Validator:
    """The compiled validator of one component schema (cached: compiled once per run)."""
    if name not in _document()["components"]["schemas"]:
        raise KeyError(f"{name} is not in the extracted subset; add it to extract_spec.ROOTS")
    return Draft202012Validator({"$ref": f"{BASE_URI}{REF_PREFIX}{name}"}, registry=_registry())


@cache
def _event_schemas() -> dict[str, str]:
    """Each Responses stream event's `type` -> the name of its schema."""
    members = _document()["components"]["schemas"][STREAM_EVENT]["anyOf"]
    by_type: dict[str, str] = {}
    for member in members:
        name = member["$ref"].removeprefix(REF_PREFIX)
        event_type = _document()["components"]["schemas"][name]["properties"]["type"]
        for value in event_type.get("enum", [event_type.get("const")]):
            by_type[value] = name
    return by_type


def check(name: str, instance: Any, what: str = "") -> None:
    """Raises SpecViolation if `instance` does not match the spec's schema `name`."""
    error = best_match(validator(name).iter_errors(instance))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        shown = json.dumps(instance)[:600]
        raise SpecViolation(
            f"{what or name} breaks OpenAI's {name} at {where}: {error.message[:400]}\n{shown}"
        )


def check_chat_completion(body: dict[str, Any]) -> None:
    check(CHAT_COMPLETION, body, "a chat completion")


def check_chat_chunk(chunk: dict[str, Any]) -> None:
    """A chunk, or nothing for an error frame (`{"error": ...}` ends a failed stream)."""
    if "error" not in chunk:
        check(CHAT_CHUNK, chunk, "a chat completion chunk")


def check_response(response: dict[str, Any]) -> None:
    check(RESPONSE, response, "a Responses object")


def check_like_example(operation: str, answer: dict[str, Any]) -> None:
    """An answer the spec shows only by example (see extract_spec.EXAMPLE_OPERATIONS): the
    example's fields, each of the same JSON type, and its constants (every non-id value)."""
    example = _document()["examples"][operation]
    if set(answer) != set(example):
        raise SpecViolation(f"{operation}: fields {sorted(answer)}, OpenAI's {sorted(example)}")
    for name, shown in example.items():
        if type(answer[name]) is not type(shown) or (name != "id" and answer[name] != shown):
            raise SpecViolation(f"{operation}: {name} is {answer[name]!r}, OpenAI's {shown!r}")


def known_event_types() -> frozenset[str]:
    """Every Responses stream event `type` the extracted spec defines."""
    return frozenset(_event_schemas())


def check_response_event(event: dict[str, Any]) -> None:
    """Against the schema its `type` names. A type the subset does not know passes: a native
    upstream's newer events are relayed as they come (the direct tests in
    test_spec_conformance.py hold our own writer to known types)."""
    name = _event_schemas().get(event.get("type", ""))
    if name is not None:
        check(name, event, f"a {event['type']} event")


def maybe(checker: Any, instance: Any) -> None:
    """`checker(instance)` unless the helpers' checks are turned off (see DISABLE)."""
    if enabled():
        checker(instance)


CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


def check_http_answer(method: str, path: str, status: int, media_type: str, body: bytes) -> None:
    """Any successful answer of the OpenAI faces as a client receives it over HTTP: a chat
    completion or its SSE chunks, a Responses object (created or fetched) or its events.
    Errors, other paths and other APIs (Anthropic's /v1/messages) pass unchecked."""
    if status != 200 or not enabled():
        return
    stream = media_type.startswith("text/event-stream")
    if not stream and not media_type.startswith("application/json"):
        return
    if path == CHAT_PATH and method == "POST":
        _check_chat_answer(body, stream=stream)
    elif path.startswith(RESPONSES_PATH) and method == "DELETE":
        check_like_example("deleteResponse", json.loads(body))
    elif path.startswith(RESPONSES_PATH) and not path.endswith(("/input_items", "input_tokens")):
        _check_responses_answer(body, stream=stream)


def _check_chat_answer(body: bytes, *, stream: bool) -> None:
    if not stream:
        check_chat_completion(json.loads(body))
        return
    for payload in _sse_data(body):
        if payload != "[DONE]":
            check_chat_chunk(json.loads(payload))


def _check_responses_answer(body: bytes, *, stream: bool) -> None:
    """Events, or a Response."""
    if stream:
        for payload in _sse_data(body):
            check_response_event(json.loads(payload))
        return
    answer = json.loads(body)
    if answer.get("object") == "response":
        check_response(answer)


def _sse_data(body: bytes) -> list[str]:
    """The `data:` payload of each frame, lenient about anything else (framing is the
    helpers' business; this only checks what the frames carry)."""
    payloads = []
    for frame in body.decode("utf-8", "replace").split("\n\n"):
        lines = [line for line in frame.split("\n") if line.startswith("data:")]
        if lines:
            payloads.append("\n".join(line[5:].removeprefix(" ") for line in lines))
    return payloads
