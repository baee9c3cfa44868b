"""Bedrock's own definition of the Converse shapes (botocore's `bedrock-runtime` service model),
for checking what the translator builds and what the tests feed it: botocore's validator for
requests (types, required members, unions with exactly one member, lengths and ranges), plus
the patterns it leaves unchecked (tool names and ids)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import botocore.session
from botocore.model import ServiceModel, Shape, StructureShape
from botocore.validate import ParamValidator

MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@cache
def service_model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("bedrock-runtime")


def input_shape(operation: str) -> StructureShape:
    shape = service_model().operation_model(operation).input_shape
    assert shape is not None
    return shape


def shape(name: str) -> Shape:
    return service_model().shape_for(name)


def request_problems(body: dict[str, Any], *, stream: bool = False) -> str:
    """botocore's report on a Converse (or ConverseStream) body, "" when valid; then the
    name and id patterns, which botocore's validator does not enforce but Bedrock does."""
    operation = "ConverseStream" if stream else "Converse"
    report = ParamValidator().validate({"modelId": MODEL_ID, **body}, input_shape(operation))
    problems = [report.generate_report()] if report.has_errors() else []
    problems += _pattern_problems(body)
    return "\n".join(problem for problem in problems if problem)


def _pattern_problems(body: dict[str, Any]) -> list[str]:
    name_pattern = re.compile(shape("ToolName").metadata["pattern"])
    id_pattern = re.compile(shape("ToolUseId").metadata["pattern"])
    problems: list[str] = []
    names = [tool["toolSpec"]["name"] for tool in _tools(body) if "toolSpec" in tool]
    ids: list[str] = []
    for message in body.get("messages", []):
        for block in message["content"]:
            if "toolUse" in block:
                names.append(block["toolUse"]["name"])
                ids.append(block["toolUse"]["toolUseId"])
            if "toolResult" in block:
                ids.append(block["toolResult"]["toolUseId"])
    problems += [f"tool name {n!r}" for n in names if not _fits(name_pattern, n, 64)]
    problems += [f"toolUseId {i!r}" for i in ids if not _fits(id_pattern, i, 64)]
    return problems


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = body.get("toolConfig", {}).get("tools", [])
    return tools


def _fits(pattern: re.Pattern[str], value: str, longest: int) -> bool:
    return bool(pattern.fullmatch(value)) and 1 <= len(value) <= longest


def output_problems(shape_name: str, value: dict[str, Any]) -> list[str]:
    """A test's upstream answer or event against the output shape it stands for: member
    names known, required members present, unions with exactly one member. Catches a double
    that drifts from Bedrock's definition (a misspelt field, a missing stopReason)."""
    return _check(shape(shape_name), value, shape_name)


def _check(definition: Shape, value: Any, where: str) -> list[str]:
    if definition.type_name == "structure" and not definition.metadata.get("document"):
        assert isinstance(definition, StructureShape)
        return _check_structure(definition, value, where)
    if definition.type_name == "list":
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        member = definition.member  # type: ignore[attr-defined]
        return [p for i, item in enumerate(value) for p in _check(member, item, f"{where}[{i}]")]
    scalar = {"string": str, "integer": int}.get(definition.type_name)
    if scalar is not None and not isinstance(value, scalar):
        return [f"{where}: not a {definition.type_name}"]
    return []


def _check_structure(definition: StructureShape, value: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}.{key}: unknown" for key in value if key not in definition.members]
    problems += [
        f"{where}.{key}: missing" for key in definition.required_members if key not in value
    ]
    if definition.metadata.get("union") and len(value) != 1:
        problems.append(f"{where}: a union needs exactly one member, has {sorted(value)}")
    for key, member in definition.members.items():
        if key in value:
            problems += _check(member, value[key], f"{where}.{key}")
    return problems
