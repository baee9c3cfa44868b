"""OpenAI chat requests -> Anthropic Messages API requests (`POST {base_url}/v1/messages`):
fields, tools and tool_choice (PROTOCOLS §B.2, B.10); the messages themselves are messages.py's."""

from __future__ import annotations

import re
from typing import Any

import orjson

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import ChatRequest, Message, NamedToolChoice, Tool, ToolChoice
from app.translators.anthropic.messages import convert_messages
from app.translators.anthropic.structured import (
    forced_choice,
    json_format,
    json_tool,
    native_fields,
    tool_mode,
)
from app.translators.anthropic.thinking import plan_thinking
from app.translators.base import (
    ANY_VALUE,
    AcceptedFields,
    Target,
    UpstreamRequest,
    check_extra_fields,
    provider_headers,
)
from app.translators.message_parts import HISTORY_TOOL_SCHEMA, called_tool_names
from app.translators.prompt_cache import (
    auto_marks,
    control_of,
    ephemeral,
    is_billing_line,
    without_billing_line,
)

ANTHROPIC_VERSION = "2023-06-01"
MAX_TOOL_NAME = 64
_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")

# Anthropic requires max_tokens and OpenAI clients rarely send one. 4096 is what LiteLLM
# defaults to: room for a long answer or several tool calls, within every Claude model's limit.
DEFAULT_MAX_TOKENS = 4096

TOOL_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},  # tools are still sent: history with tool blocks needs them (B.9.9)
}

# Every request field ChatRequest does not declare, and what an anthropic upstream makes of it
# (see AcceptedFields): a field not listed is refused by name, so nothing the client asked for
# is silently lost. Defaults that are accepted are not sent.
EXTRA_FIELDS: AcceptedFields = {
    # Anthropic's own sampling field, sent as is.
    "top_k": ANY_VALUE,
    # OpenAI's successor to `user`: sent as metadata.user_id when `user` is absent.
    "safety_identifier": ANY_VALUE,
    # Dropped knowingly: they steer OpenAI's own side (storage of completions and their tags,
    # billing tier, cache routing), not what the model answers.
    "store": ANY_VALUE,
    "metadata": ANY_VALUE,  # OpenAI's tags for stored completions, not Anthropic's metadata
    "service_tier": ANY_VALUE,
    "prompt_cache_key": ANY_VALUE,
    "prompt_cache_retention": ANY_VALUE,
    # No Anthropic equivalent: accepted only at the OpenAI default (B.2).
    "logprobs": (False,),
    "top_logprobs": (),
    "seed": (),
    "frequency_penalty": (0,),
    "presence_penalty": (0,),
    "logit_bias": ({},),
    "response_format": ANY_VALUE,  # -> output_config.format or an answer tool (structured.py)
    "functions": ([],),
    "function_call": (),
    "audio": (),
    "modalities": (["text"],),
    "prediction": (),
    "web_search_options": (),
    "reasoning_effort": ANY_VALUE,  # -> `thinking` (thinking.py)
}


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The Messages API request for one attempt; every refusal happens before anything is sent."""
    upstream_body, warning = messages_body(request, target)
    return UpstreamRequest(
        url=f"{target.provider.base_url}/v1/messages",
        headers=_headers(target.provider),
        body=orjson.dumps(upstream_body),
        stream=bool(request.stream),
        warning=warning,
    )


def messages_body(request: ChatRequest, target: Target) -> tuple[dict[str, Any], str | None]:
    """The Messages API body (not yet serialised: Claude on Vertex AI sends it with its own
    changes), and what translation could not honour as asked."""
    check_extra_fields(request, EXTRA_FIELDS, "anthropic")
    auto = auto_marks(request, target)
    thinking = plan_thinking(request, target)
    system, messages = convert_messages(request.messages, thinking=thinking.budget is not None)
    if target.provider.kind != "anthropic":
        _drop_billing_line(system)
    max_tokens = _max_tokens(request, target)
    upstream_body: dict[str, Any] = {
        "model": target.upstream_model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": bool(request.stream),
    }
    if thinking.budget is not None:
        upstream_body["thinking"] = {"type": "enabled", "budget_tokens": thinking.budget}
        if max_tokens <= thinking.budget:  # thinking counts toward max_tokens (B.7)
            upstream_body["max_tokens"] = max_tokens + thinking.budget
    if system:
        upstream_body["system"] = system
    upstream_body.update(_tool_fields(request, target, thinking=thinking.budget is not None))
    upstream_body.update(_sampling_fields(request))
    if auto:
        _mark_prefix(upstream_body)
    return upstream_body, thinking.warning


def _drop_billing_line(system: list[dict[str, Any]]) -> None:
    """Claude Code's billing line changes on every request: anywhere but Anthropic's own API
    it would change the prompt's first bytes (prompt_cache.py)."""
    if system and is_billing_line(system[0]["text"]):
        rest = without_billing_line(system[0]["text"])
        if rest.strip():
            system[0] = {**system[0], "text": rest}
        else:
            del system[0]


def _mark_prefix(body: dict[str, Any]) -> None:
    """The automatic breakpoints: the last tool, the last system block, and the last block of
    the last message that may carry one (thinking blocks may not)."""
    for blocks in (body.get("tools"), body.get("system")):
        if blocks:
            blocks[-1]["cache_control"] = ephemeral()
    for block in reversed(body["messages"][-1]["content"]):
        if block["type"] not in ("thinking", "redacted_thinking"):
            block["cache_control"] = ephemeral()
            return


def _max_tokens(request: ChatRequest, target: Target) -> int:
    """The client's limit, else the model's configured default, else ours: Anthropic has no
    default of its own (B.2)."""
    if request.output_limit is not None:
        return request.output_limit
    if target.max_tokens is not None:
        return target.max_tokens
    return DEFAULT_MAX_TOKENS


def _tool_fields(request: ChatRequest, target: Target, *, thinking: bool) -> dict[str, Any]:
    """`tools` and `tool_choice`, and what `response_format` becomes (structured.py): the
    native `output_config`, or an answer tool added to the client's own. That tool is forced
    only when nothing competes with it: thinking refuses forced tools (B.7), and the client's
    own tools and tool_choice keep their meaning. A history with tool calls but no tools in
    the request gets its called tools declared (_history_tools)."""
    fields: dict[str, Any] = {}
    tools = [_tool(tool) for tool in request.tools or ()]
    tool_choice = _tool_choice(request.tool_choice, request.parallel_tool_calls) if tools else None
    wanted = json_format(request)
    if wanted is not None and not tool_mode(target):
        fields.update(native_fields(wanted))
    elif wanted is not None:
        answer = json_tool(request, wanted)
        if not tools and not thinking:
            tool_choice = forced_choice(answer["name"], request.parallel_tool_calls)
        tools.append(answer)
    if not tools and (tools := _history_tools(request.messages)):
        tool_choice = {"type": "none"}  # the client defined none: Claude may not call these
    if tools:
        fields["tools"] = tools
    if tool_choice is not None:
        fields["tool_choice"] = tool_choice
    return fields


def _tool(tool: Tool) -> dict[str, Any]:
    """A function tool. Anthropic needs `input_schema` and its root `type: object`; OpenAI
    lets both be left out for a parameterless function."""
    function = tool.function
    parameters = function.parameters
    if not parameters:
        input_schema: dict[str, Any] = {"type": "object", "properties": {}}
    elif "type" not in parameters:
        input_schema = {"type": "object", **parameters}
    else:
        input_schema = parameters
    anthropic_tool: dict[str, Any] = {"name": function.name}
    if function.description:
        anthropic_tool["description"] = function.description
    anthropic_tool["input_schema"] = input_schema
    if (control := control_of(tool)) is not None:
        anthropic_tool["cache_control"] = ephemeral(control)
    return anthropic_tool


def _history_tools(messages: list[Message]) -> list[dict[str, Any]]:
    """A tool per name the history calls, with the minimal schema: Claude refuses tool_use and
    tool_result blocks in a request that defines no tools (a client that stopped sending them
    once the calls were made, or an agent summarising its run), as Converse does (bedrock's
    _history_tools). Their names are only declared, never called (tool_choice none), so a name
    another upstream gave a call is declared with its characters Claude refuses replaced."""
    names = called_tool_names(messages)
    declared = dict.fromkeys(
        _NAME_BAD_CHARS.sub("_", name)[:MAX_TOOL_NAME] or "_" for name in names
    )
    return [{"name": name, "input_schema": HISTORY_TOOL_SCHEMA} for name in declared]


def _tool_choice(choice: ToolChoice | None, parallel: bool | None) -> dict[str, Any] | None:
    """`parallel_tool_calls: false` lives inside Anthropic's tool_choice, negated, and is not
    allowed on `none` (B.9.10); with no choice given it needs an explicit `auto`."""
    if isinstance(choice, NamedToolChoice):
        anthropic_choice: dict[str, Any] = {"type": "tool", "name": choice.function.name}
    elif choice is not None:
        anthropic_choice = dict(TOOL_CHOICES[choice])
    elif parallel is False:
        anthropic_choice = {"type": "auto"}
    else:
        return None
    if parallel is False and anthropic_choice["type"] != "none":
        anthropic_choice["disable_parallel_tool_use"] = True
    return anthropic_choice


def _sampling_fields(request: ChatRequest) -> dict[str, Any]:
    """Sampling and bookkeeping fields. `temperature` is copied: Anthropic's range is 0-1,
    OpenAI's 0-2, and Anthropic's own 400 for a value above 1 says so better than a clamp."""
    extra = request.model_extra or {}
    fields: dict[str, Any] = {}
    stop_sequences = _stop_sequences(request.stop)
    if stop_sequences:
        fields["stop_sequences"] = stop_sequences
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.top_p is not None:
        fields["top_p"] = request.top_p
    if extra.get("top_k") is not None:
        fields["top_k"] = extra["top_k"]
    user_id = request.user or extra.get("safety_identifier")
    if user_id:
        fields["metadata"] = {"user_id": user_id}
    return fields


def _stop_sequences(stop: str | list[str] | None) -> list[str]:
    sequences = [stop] if isinstance(stop, str) else list(stop or ())
    if any(not sequence.strip() for sequence in sequences):
        raise InvalidRequest(
            "anthropic upstreams reject empty or whitespace-only stop sequences", param="stop"
        )
    return sequences


def _headers(provider: ProviderConfig) -> dict[str, str]:
    """Auth and version, then the provider's configured headers, which win (a configured
    `anthropic-beta` or a different version is deliberate)."""
    headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
    if provider.api_key:
        headers["x-api-key"] = provider.api_key
    return provider_headers(headers, provider)
