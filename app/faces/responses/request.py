"""A Responses API request -> the chat request every per-kind translator takes.

Requirements are mapped or refused by name; the cache key and end-user ids go on as chat's
own; hints with no chat equivalent (service tier, `include`, metadata...) are dropped, never
refused, because every client sends some of them on every request (CONTRACT.md, "OpenAI
Responses API"). The conversation before this request (`previous_response_id`,
`item_reference`s) is resolved by the caller, which owns the store; this module only maps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import InvalidRequest
from app.faces.responses.history import History
from app.faces.responses.tools import ToolNames, chat_tool_choice, chat_tools

MAPPED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "stream",
        "store",
        "previous_response_id",
        "include",
    }
)
HINTS = frozenset(
    {
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "user",
        "service_tier",
        "truncation",
        "metadata",
        "stream_options",
        "client_metadata",
        "top_logprobs",
        "context_management",
        "moderation",
    }
)
CARRIED = ("prompt_cache_key", "safety_identifier", "user")
"""Hints chat has too, with the same meaning: openai kinds relay them (`prompt_cache_key` keeps
the conversation on a warm prompt cache), the others drop them, and they name the
conversation for deployment affinity (CONTRACT.md, "Prompt caching")."""
REFUSED = {
    "background": "background responses are not supported: send the request without it",
    "conversation": "server-side conversations are not supported: use previous_response_id",
    "prompt": "stored prompt templates live on OpenAI's side: send the prompt's text instead",
    "max_tool_calls": "a cap on tool calls cannot be enforced on this model's upstream",
}
# Effort names Responses has beyond chat's, as the nearest chat effort.
EFFORTS = {"xhigh": "high", "max": "high"}


@dataclass(slots=True)
class Translation:
    """The chat request (as wire JSON) and what putting the answer back needs."""

    wire: dict[str, Any]
    tools: ToolNames = field(default_factory=ToolNames)
    verbosity: str | None = None
    """`text.verbosity`: Chat Completions' `verbosity` on the openai kinds only (the face adds
    it per target: the other kinds refuse a field they cannot honour)."""

    @property
    def warning(self) -> str | None:
        hosted = self.tools.hosted
        if not hosted:
            return None
        return "hosted tools left out (they run only on OpenAI): " + ", ".join(hosted)


def translate(body: dict[str, Any], history: list[Any]) -> Translation:
    """`history`: the items before this request's `input` (a previous response's
    conversation), already resolved. InvalidRequest names what cannot be carried."""
    _check_fields(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    messages, offered = chat_messages(body, history)
    names = ToolNames()
    tools = chat_tools(body.get("tools"), names, offered)
    choice, tools = chat_tool_choice(body.get("tool_choice"), tools, names)
    wire: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        wire["tools"] = tools
    if choice is not None and (tools or choice == "none"):
        wire["tool_choice"] = choice
    wire.update(_generation_fields(body))
    wire.update(
        (name, body[name]) for name in CARRIED if isinstance(body.get(name), str) and body[name]
    )
    text = body.get("text")
    verbosity = text.get("verbosity") if isinstance(text, dict) else None
    return Translation(wire, names, verbosity if isinstance(verbosity, str) else None)


def chat_messages(
    body: dict[str, Any], history: list[Any]
) -> tuple[list[dict[str, Any]], list[tuple[list[Any], str]]]:
    """The chat messages, and the tools of the conversation's `additional_tools` items."""
    instructions = body.get("instructions")
    messages: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    elif instructions is not None and not isinstance(instructions, str):
        raise InvalidRequest("instructions: Input should be a valid string", param="instructions")
    builder = History(messages)
    for position, item in enumerate(history):
        builder.add(item, f"previous_response_id.{position}")
    for position, item in enumerate(input_items(body.get("input"))):
        builder.add(item, f"input.{position}")
    messages = builder.close()
    if not any(message["role"] != "system" for message in messages):
        raise InvalidRequest("input: Field required (a string or a list of items)", param="input")
    return messages, builder.offered


def input_items(given: Any) -> list[Any]:
    """`input` as a list of items (a string is one user message)."""
    if given is None:
        return []
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    if not isinstance(given, list):
        raise InvalidRequest("input: Input should be a valid string or list", param="input")
    return given


def _check_fields(body: dict[str, Any]) -> None:
    for name, value in body.items():
        if name in MAPPED or name in HINTS or value is None:
            continue
        if name in REFUSED:
            if name == "background" and value is False:
                continue
            raise InvalidRequest(f"{name}: {REFUSED[name]}", param=name)
        raise InvalidRequest(f"{name}: Extra inputs are not permitted", param=name)


RANGES = {"temperature": (0, 2), "top_p": (0, 1)}
"""OpenAI's bounds: a value outside is refused here, as OpenAI refuses it, rather than echoed
in a Response that its own spec then rejects (the demo kind would answer it)."""
MIN_OUTPUT_TOKENS = 1
"""A `max_output_tokens` of 0 passed on is refused by Bedrock and Anthropic as an upstream
400 (the cloud fuzz found it): it is the client's error, refused here in the face's terms."""


def _max_output_tokens(value: Any) -> int:
    if type(value) is not int or value < MIN_OUTPUT_TOKENS:
        raise InvalidRequest(
            f"max_output_tokens: Input should be an integer of at least {MIN_OUTPUT_TOKENS}",
            param="max_output_tokens",
        )
    return value


def _generation_fields(body: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, (low, high) in RANGES.items():
        value = body.get(name)
        if value is not None and (type(value) not in (int, float) or not low <= value <= high):
            raise InvalidRequest(f"{name}: Input should be from {low} to {high}", param=name)
    for name in ("temperature", "top_p", "parallel_tool_calls"):
        if body.get(name) is not None:
            fields[name] = body[name]
    if body.get("max_output_tokens") is not None:
        fields["max_completion_tokens"] = _max_output_tokens(body["max_output_tokens"])
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        effort = reasoning["effort"]
        fields["reasoning_effort"] = EFFORTS.get(effort, effort)
    elif reasoning is not None and not isinstance(reasoning, dict):
        raise InvalidRequest("reasoning: Input should be a valid dictionary", param="reasoning")
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        fields["response_format"] = response_format
    if body.get("stream") is True:
        fields["stream"] = True
        fields["stream_options"] = {"include_usage": True}
    return fields


def _response_format(text: Any) -> dict[str, Any] | None:
    """`text.format` -> chat's `response_format` (json_schema is flat here, nested there)."""
    if text is None:
        return None
    text_format = text.get("format") if isinstance(text, dict) else None
    if text_format is None:
        return None
    kind = text_format.get("type") if isinstance(text_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        assert isinstance(text_format, dict)
        keys = ("name", "schema", "strict", "description")
        json_schema = {key: text_format[key] for key in keys if text_format.get(key) is not None}
        return {"type": "json_schema", "json_schema": json_schema}
    raise InvalidRequest(
        "text.format.type: Input should be 'text', 'json_object' or 'json_schema'",
        param="text.format",
    )
