"""`response_format` on anthropic upstreams (PROTOCOLS B.6, CONTRACT "The client-facing API").

By default the schema goes as Anthropic's `output_config.format` and the answer comes back as
ordinary text. With the model's `structured_output: tool` it becomes a tool (JSON_TOOL) whose
`input_schema` is the schema: forced when nothing else competes for tool_choice, only offered
when thinking is on (Anthropic refuses forced tools with thinking, B.7) or the client sent its
own tools. That tool's input is the answer: its call becomes `content`, never a tool call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import InvalidRequest
from app.openai_types import ChatRequest
from app.translators.base import ResponseContext, Target

JSON_TOOL = "json_response"
JSON_TOOL_DESCRIPTION = (
    "Give your final answer by calling this tool: its input is the answer, as JSON matching "
    "the schema."
)
# OpenAI's `json_object` has no schema; Anthropic's format and tools need one (CONTRACT).
ANY_OBJECT: dict[str, Any] = {"type": "object"}
PARAM = "response_format"


@dataclass(frozen=True, slots=True)
class JsonFormat:
    """What the client asked for: a schema (ANY_OBJECT for `json_object`) and the
    description it gave, which helps the model when the schema is offered as a tool."""

    schema: dict[str, Any]
    description: str | None = None


def json_format(request: ChatRequest) -> JsonFormat | None:
    """The requested JSON output, None for text (the default). Refuses, by name, a
    `response_format` no upstream could honour."""
    response_format = (request.model_extra or {}).get("response_format")
    if response_format is None:
        return None
    format_type = response_format.get("type") if isinstance(response_format, dict) else None
    if format_type == "text":
        return None
    if format_type == "json_object":
        return JsonFormat(ANY_OBJECT)
    if format_type != "json_schema":
        raise InvalidRequest(
            "'response_format' must have type text, json_object or json_schema", param=PARAM
        )
    json_schema = response_format.get("json_schema")
    if not isinstance(json_schema, dict):
        raise InvalidRequest(
            "'response_format.json_schema' must be an object", param=f"{PARAM}.json_schema"
        )
    schema = json_schema.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise InvalidRequest(
            "'response_format.json_schema.schema' must be an object",
            param=f"{PARAM}.json_schema.schema",
        )
    description = json_schema.get("description")
    return JsonFormat(schema or ANY_OBJECT, description if isinstance(description, str) else None)


def json_tool_name(request: ChatRequest) -> str:
    """JSON_TOOL, or the first `JSON_TOOL_<n>` the client's own tools leave free: the request
    and its answer both derive it from the request, so no state is kept between them."""
    taken = {tool.function.name for tool in request.tools or ()}
    name, number = JSON_TOOL, 1
    while name in taken:
        number += 1
        name = f"{JSON_TOOL}_{number}"
    return name


def answer_tool(ctx: ResponseContext) -> str | None:
    """The tool whose input is the answer, when this attempt offered one: the target is
    `structured_output: tool` and the client asked for JSON."""
    target = ctx.target
    if target is None or target.structured_output != "tool":
        return None
    if json_format(ctx.request) is None:
        return None
    return json_tool_name(ctx.request)


def native_fields(wanted: JsonFormat) -> dict[str, Any]:
    """`output_config.format`, the schema as given: Anthropic takes `$ref`/`$defs` there, and
    its own 400 names a keyword it does not support better than a silent rewrite would."""
    return {"output_config": {"format": {"type": "json_schema", "schema": wanted.schema}}}


def json_tool(request: ChatRequest, wanted: JsonFormat) -> dict[str, Any]:
    """The answer tool. Anthropic needs an object at an input schema's root (so does OpenAI's
    strict structured output); a schema without `type` is taken as one, like function tools."""
    schema = wanted.schema
    if "type" not in schema:
        schema = {"type": "object", **schema}
    elif schema["type"] != "object":
        raise InvalidRequest(
            "'response_format.json_schema.schema' must describe an object for models with "
            "structured_output: tool",
            param=f"{PARAM}.json_schema.schema",
        )
    return {
        "name": json_tool_name(request),
        "description": wanted.description or JSON_TOOL_DESCRIPTION,
        "input_schema": schema,
    }


def tool_mode(target: Target) -> bool:
    return target.structured_output == "tool"


def forced_choice(name: str, parallel: bool | None) -> dict[str, Any]:
    """tool_choice forcing the answer tool; `parallel_tool_calls: false` kept as asked."""
    choice: dict[str, Any] = {"type": "tool", "name": name}
    if parallel is False:
        choice["disable_parallel_tool_use"] = True
    return choice


def content_from_tool(completion: dict[str, Any], name: str) -> None:
    """A non-stream answer whose answer tool was called: its arguments become `content`
    (replacing any text the model wrote around it, as the stream does) and the call goes.
    `finish_reason` is `stop` unless calls to the client's own tools remain."""
    choice = completion["choices"][0]
    message = choice["message"]
    calls = message.get("tool_calls") or []
    answers = [call for call in calls if call["function"]["name"] == name]
    if not answers:
        return
    message["content"] = answers[0]["function"]["arguments"]
    others = [call for call in calls if call["function"]["name"] != name]
    if others:
        message["tool_calls"] = others
    else:
        del message["tool_calls"]
        if choice["finish_reason"] == "tool_calls":
            choice["finish_reason"] = "stop"
