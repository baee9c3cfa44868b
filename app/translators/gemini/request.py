"""OpenAI chat requests -> Gemini `generateContent` requests: fields, tools, tool_config and
generationConfig (PROTOCOLS C.2, C.8); messages, schemas and ids have their own modules."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import ChatRequest, NamedToolChoice, Tool, ToolChoice
from app.translators.base import (
    ANY_VALUE,
    AcceptedFields,
    Target,
    UpstreamRequest,
    check_extra_fields,
    provider_headers,
)
from app.translators.gemini.messages import convert_messages
from app.translators.gemini.schema import function_parameters
from app.translators.gemini.thinking import thinking_config

# OpenAI tool_choice -> Gemini functionCallingConfig.mode (C.8). `none` keeps the tools
# declared, so a history holding calls stays valid.
TOOL_CHOICES: dict[str, str] = {"auto": "AUTO", "required": "ANY", "none": "NONE"}

# Gemini takes at most five stop sequences (C.2).
MAX_STOP_SEQUENCES = 5

# Every request field ChatRequest does not declare, and what a gemini upstream makes of it (see
# AcceptedFields): a field not listed is refused by name, so nothing the client asked for is
# silently lost. Defaults that are accepted are not sent.
EXTRA_FIELDS: AcceptedFields = {
    # Sent as generationConfig fields (see _generation_config).
    "top_k": ANY_VALUE,
    "seed": ANY_VALUE,
    "presence_penalty": ANY_VALUE,
    "frequency_penalty": ANY_VALUE,
    "response_format": ANY_VALUE,  # checked in _response_format
    # Dropped knowingly: they steer OpenAI's own side (end-user ids for abuse monitoring,
    # storage of completions and their tags, billing tier, cache routing), not the answer.
    "safety_identifier": ANY_VALUE,
    "store": ANY_VALUE,
    "metadata": ANY_VALUE,
    "service_tier": ANY_VALUE,
    "prompt_cache_key": ANY_VALUE,
    "prompt_cache_retention": ANY_VALUE,
    # Not translated: accepted only at the OpenAI default.
    "logprobs": (False,),  # Gemini's logprobs have no translation to OpenAI's shape here
    "top_logprobs": (),
    "logit_bias": ({},),
    "functions": ([],),
    "function_call": (),
    "audio": (),
    "modalities": (["text"],),
    "prediction": (),
    "web_search_options": (),
    "reasoning_effort": ANY_VALUE,  # -> thinkingConfig (thinking.py)
}


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The generateContent request for one attempt; every refusal happens before anything is
    sent. The key goes in a header, never in the URL, where logs would keep it."""
    check_extra_fields(request, EXTRA_FIELDS, "gemini")
    system_instruction, contents = convert_messages(request.messages)
    upstream_body: dict[str, Any] = {}
    if system_instruction is not None:
        upstream_body["systemInstruction"] = system_instruction
    upstream_body["contents"] = contents
    if request.tools:
        upstream_body["tools"] = [{"functionDeclarations": _declarations(request.tools)}]
        if request.tool_choice is not None:
            upstream_body["toolConfig"] = _tool_config(request.tool_choice)
    generation_config = _generation_config(request, target)
    if generation_config:
        upstream_body["generationConfig"] = generation_config
    method = "streamGenerateContent?alt=sse" if request.stream else "generateContent"
    return UpstreamRequest(
        url=f"{target.provider.base_url}/v1beta/{_model_path(target.upstream_model)}:{method}",
        headers=gemini_headers(target.provider),
        body=orjson.dumps(upstream_body),
        stream=bool(request.stream),
    )


def _model_path(upstream_model: str) -> str:
    """`models/{id}`; a configured `models/...` or `tunedModels/...` name is used as is."""
    path = upstream_model
    if not path.startswith(("models/", "tunedModels/")):
        path = f"models/{path}"
    return quote(path, safe="/")


def _declarations(tools: list[Tool]) -> list[dict[str, Any]]:
    """Function declarations. `strict` has no Gemini counterpart and is dropped: the
    converted schema is what Gemini holds its calls to either way."""
    declarations = []
    for position, tool in enumerate(tools):
        function = tool.function
        if not (function.name[0].isalpha() or function.name[0] == "_"):
            raise InvalidRequest(
                f"gemini upstreams need function names that start with a letter or an "
                f"underscore, not '{function.name}'",
                param=f"tools[{position}].function.name",
            )
        declaration: dict[str, Any] = {"name": function.name}
        if function.description:
            declaration["description"] = function.description
        param = f"tools[{position}].function.parameters"
        parameters = function_parameters(function.parameters, param)
        if parameters is not None:
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return declarations


def _tool_config(choice: ToolChoice) -> dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        config = {"mode": "ANY", "allowedFunctionNames": [choice.function.name]}
    else:
        config = {"mode": TOOL_CHOICES[choice]}
    return {"functionCallingConfig": config}


def _generation_config(request: ChatRequest, target: Target) -> dict[str, Any]:
    """Sampling and output fields. The limit is the client's, else the model's configured
    default, else none: Gemini has its own default, unlike Anthropic. Zero penalties are
    OpenAI's default and are not sent (some Gemini models reject the fields outright)."""
    extra = request.model_extra or {}
    config: dict[str, Any] = {}
    limit = request.output_limit if request.output_limit is not None else target.max_tokens
    sampling = {
        "maxOutputTokens": limit,
        "temperature": request.temperature,
        "topP": request.top_p,
        "topK": extra.get("top_k"),
        "seed": extra.get("seed"),
        "presencePenalty": extra.get("presence_penalty") or None,
        "frequencyPenalty": extra.get("frequency_penalty") or None,
    }
    config.update({name: value for name, value in sampling.items() if value is not None})
    stop_sequences = _stop_sequences(request.stop)
    if stop_sequences:
        config["stopSequences"] = stop_sequences
    config.update(_response_format(extra.get("response_format")))
    thinking = thinking_config(request, target)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def _stop_sequences(stop: str | list[str] | None) -> list[str]:
    sequences = [stop] if isinstance(stop, str) else list(stop or ())
    if len(sequences) > MAX_STOP_SEQUENCES:
        raise InvalidRequest(
            f"gemini upstreams take at most {MAX_STOP_SEQUENCES} stop sequences", param="stop"
        )
    return sequences


def _response_format(response_format: Any) -> dict[str, Any]:
    """`json_object` -> JSON output; `json_schema` -> JSON output held to the schema, sent as
    `responseJsonSchema`: plain JSON Schema as given, `$ref`/`$defs` kept (C.3: inlining for
    the older `responseSchema` blew up nesting depth). `strict` is how Gemini treats a schema
    anyway. `text` is the default."""
    if response_format is None:
        return {}
    format_type = response_format.get("type") if isinstance(response_format, dict) else None
    if format_type == "text":
        return {}
    if format_type == "json_object":
        return {"responseMimeType": "application/json"}
    if format_type != "json_schema":
        raise InvalidRequest(
            "'response_format' must have type text, json_object or json_schema",
            param="response_format",
        )
    json_schema = response_format.get("json_schema")
    schema = json_schema.get("schema") if isinstance(json_schema, dict) else None
    if schema is not None and not isinstance(schema, dict):
        raise InvalidRequest(
            "'response_format.json_schema.schema' must be an object",
            param="response_format.json_schema.schema",
        )
    fields: dict[str, Any] = {"responseMimeType": "application/json"}
    if schema:
        fields["responseJsonSchema"] = schema
    return fields


def gemini_headers(provider: ProviderConfig) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if provider.api_key:
        headers["x-goog-api-key"] = provider.api_key
    return provider_headers(headers, provider)
