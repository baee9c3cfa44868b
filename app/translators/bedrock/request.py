"""OpenAI chat requests -> Bedrock Converse requests (`POST {base_url}/model/{modelId}/converse`,
`/converse-stream`; PROTOCOLS H.1, shapes from botocore's `bedrock-runtime` service model):
fields, tools, tool_choice, reasoning and structured output; the messages are messages.py's.

The request goes unsigned without an API key: SigV4 signs it later, over the exact URL and
body built here (app/credentials/).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from app.errors import InvalidRequest
from app.openai_types import ChatRequest, NamedToolChoice, Tool
from app.translators.anthropic.request import DEFAULT_MAX_TOKENS
from app.translators.anthropic.structured import JsonFormat, json_format, json_tool, tool_mode
from app.translators.anthropic.thinking import plan_thinking
from app.translators.base import (
    ANY_VALUE,
    AcceptedFields,
    Target,
    UpstreamRequest,
    check_extra_fields,
    provider_headers,
)
from app.translators.bedrock.claude import claude_fields
from app.translators.bedrock.messages import cache_point, convert_messages
from app.translators.bedrock.names import ToolNames, tool_names
from app.translators.message_parts import HISTORY_TOOL_SCHEMA, called_tool_names
from app.translators.prompt_cache import auto_marks, control_of

TOOL_CHOICES: dict[str, dict[str, Any]] = {"auto": {"auto": {}}, "required": {"any": {}}}

# Request fields ChatRequest does not declare, and what a bedrock upstream makes of each (see
# AcceptedFields): anything not listed is refused by name.
EXTRA_FIELDS: AcceptedFields = {
    # Dropped knowingly: they steer OpenAI's own side (storage, billing tier, cache routing,
    # end-user tags), not what the model answers.
    "safety_identifier": ANY_VALUE,
    "store": ANY_VALUE,
    "metadata": ANY_VALUE,
    "service_tier": ANY_VALUE,
    "prompt_cache_key": ANY_VALUE,
    "prompt_cache_retention": ANY_VALUE,
    # No Converse equivalent: accepted only at the OpenAI default.
    "logprobs": (False,),
    "top_logprobs": (),
    "seed": (),
    "frequency_penalty": (0,),
    "presence_penalty": (0,),
    "logit_bias": ({},),
    "functions": ([],),
    "function_call": (),
    "audio": (),
    "modalities": (["text"],),
    "prediction": (),
    "web_search_options": (),
    "response_format": ANY_VALUE,  # -> outputConfig.textFormat, or a forced tool
    "reasoning_effort": ANY_VALUE,  # -> additionalModelRequestFields.thinking (Claude)
}


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The Converse request for one attempt; every refusal happens before anything is sent."""
    check_extra_fields(request, EXTRA_FIELDS, "bedrock")
    auto = auto_marks(request, target) and caches(target.upstream_model)
    claude = claude_fields(request.claude, plan_thinking(request, target), target)
    thinking = claude.thinking
    thinks = thinking.budget is not None or claude.adaptive
    names = tool_names(request)
    conversation = convert_messages(request.messages, names, thinking=thinks)
    body: dict[str, Any] = {"messages": conversation.messages}
    if conversation.system:
        body["system"] = conversation.system
    inference = _inference_config(request, target, thinking.budget)
    if inference:
        body["inferenceConfig"] = inference
    additional = dict(claude.fields)
    if thinking.budget is not None:
        additional["thinking"] = {"type": "enabled", "budget_tokens": thinking.budget}
    elif claude.adaptive:
        additional["thinking"] = {"type": "adaptive"}
    if additional:
        body["additionalModelRequestFields"] = additional
    body.update(_tool_fields(request, target, names, conversation.tool_blocks, thinking.budget))
    if auto:
        _mark_prefix(body)
    action = "converse-stream" if request.stream else "converse"
    return UpstreamRequest(
        url=f"{target.provider.base_url}/model/{quote(target.upstream_model, safe='')}/{action}",
        headers=_headers(target),
        body=orjson.dumps(body),
        stream=bool(request.stream),
        warning="; ".join(filter(None, (thinking.warning, conversation.warning, claude.warning)))
        or None,
    )


def caches(model_id: str) -> bool:
    """Whether Bedrock caches this model's prompts: Claude and Nova (AWS, "Prompt caching for
    faster model inference"); others refuse a `cachePoint`, so they get no automatic one."""
    return "anthropic.claude" in model_id or "amazon.nova" in model_id


def _mark_prefix(body: dict[str, Any]) -> None:
    """The automatic breakpoints, as `cachePoint` blocks after the last tool, the last system
    block and the last block of the last message (botocore: Tool, SystemContentBlock and
    ContentBlock each take a cachePoint)."""
    tool_config = body.get("toolConfig")
    for blocks in (tool_config and tool_config["tools"], body.get("system")):
        if blocks:
            blocks.extend(cache_point(None, auto=True))
    body["messages"][-1]["content"] += cache_point(None, auto=True)


def _inference_config(request: ChatRequest, target: Target, budget: int | None) -> dict[str, Any]:
    """maxTokens from the client, else the model's configured default, else the upstream's
    own; with thinking on it is always sent and must exceed the budget (thinking counts
    toward it), as on anthropic."""
    config: dict[str, Any] = {}
    max_tokens = request.output_limit if request.output_limit is not None else target.max_tokens
    if budget is not None:
        max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        if max_tokens <= budget:
            max_tokens += budget
    if max_tokens is not None:
        config["maxTokens"] = max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.top_p is not None:
        config["topP"] = request.top_p
    stop = [request.stop] if isinstance(request.stop, str) else list(request.stop or ())
    if any(not sequence for sequence in stop):
        raise InvalidRequest("bedrock upstreams reject empty stop sequences", param="stop")
    if stop:
        config["stopSequences"] = stop
    return config


def _tool_fields(
    request: ChatRequest,
    target: Target,
    names: ToolNames,
    history_tools: bool,
    budget: int | None,
) -> dict[str, Any]:
    """`toolConfig` and `outputConfig`. With tool_choice `none` the tools still go (no
    toolChoice: Converse has no `none`) when the history holds tool blocks, since Converse
    refuses those without a toolConfig; any call the model makes anyway is dropped from the
    answer (response.py's call_limit). Without tool blocks, `none` sends no tools at all."""
    choice = request.tool_choice
    tools = []
    for tool in request.tools or ():
        tools.append(_tool_spec(tool, names))
        if tool.__pydantic_extra__:  # the client's breakpoint, as a cachePoint after it
            tools += cache_point(control_of(tool))
    if choice == "none" and not history_tools:
        tools = []
    tool_choice = _tool_choice(choice, names) if tools else None
    fields: dict[str, Any] = {}
    wanted = json_format(request)
    if wanted is not None and not tool_mode(target):
        fields["outputConfig"] = _output_config(request, wanted)
    elif wanted is not None:
        answer = json_tool(request, wanted)
        spec = {"name": answer["name"], "description": answer["description"]}
        tools.append({"toolSpec": {**spec, "inputSchema": {"json": answer["input_schema"]}}})
        if len(tools) == 1 and budget is None:
            tool_choice = {"tool": {"name": answer["name"]}}
    if history_tools and not tools:
        tools = _history_tools(request, names)
    if tools:
        fields["toolConfig"] = {"tools": tools}
        if tool_choice is not None:
            fields["toolConfig"]["toolChoice"] = tool_choice
    return fields


def _tool_spec(tool: Tool, names: ToolNames) -> dict[str, Any]:
    """A function tool. Converse needs an input schema with an object root; OpenAI lets it be
    left out for a parameterless function. A blank description is left out (min length 1)."""
    function = tool.function
    parameters = function.parameters
    if not parameters:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
    elif "type" not in parameters:
        schema = {"type": "object", **parameters}
    else:
        schema = parameters
    spec: dict[str, Any] = {"name": names.bedrock(function.name)}
    if function.description:
        spec["description"] = function.description
    spec["inputSchema"] = {"json": schema}
    return {"toolSpec": spec}


def _tool_choice(choice: Any, names: ToolNames) -> dict[str, Any] | None:
    if isinstance(choice, NamedToolChoice):
        return {"tool": {"name": names.bedrock(choice.function.name)}}
    return TOOL_CHOICES.get(choice) if isinstance(choice, str) else None


def _history_tools(request: ChatRequest, names: ToolNames) -> list[dict[str, Any]]:
    """Tools for a history whose calls name tools the request does not define (a client that
    stopped sending tools, or tool_choice none without tools): one permissive spec per name,
    so Converse accepts the history. The model may call them; tool_choice none drops such
    calls, and otherwise they are validated like any other call downstream."""
    return [
        {"toolSpec": {"name": names.bedrock(name), "inputSchema": {"json": HISTORY_TOOL_SCHEMA}}}
        for name in called_tool_names(request.messages)
    ]


def _output_config(request: ChatRequest, wanted: JsonFormat) -> dict[str, Any]:
    """`outputConfig.textFormat`: the schema as a JSON string (botocore: JsonSchemaDefinition
    `schema` is a String), with the client's name and description."""
    definition: dict[str, Any] = {"schema": orjson.dumps(wanted.schema).decode()}
    response_format = (request.model_extra or {}).get("response_format") or {}
    json_schema = response_format.get("json_schema")
    name = json_schema.get("name") if isinstance(json_schema, dict) else None
    if isinstance(name, str) and name:
        definition["name"] = name
    if wanted.description:
        definition["description"] = wanted.description
    return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}}


def _headers(target: Target) -> dict[str, str]:
    """A Bedrock API key as a Bearer token; without one the request stays unsigned here."""
    headers = {"content-type": "application/json"}
    if target.provider.api_key:
        headers["authorization"] = f"Bearer {target.provider.api_key}"
    return provider_headers(headers, target.provider)
