"""An Anthropic Messages request -> the chat request every per-kind translator takes.

Requirements are mapped or refused by name (server tools, content we cannot carry); hints are
mapped where chat has an equivalent and otherwise dropped, never refused, because Claude Code
sends all of them on every request (CONTRACT.md, "Anthropic Messages API"): a top-level
`cache_control`, `metadata` (but `user_id`, which becomes `prompt_cache_key`),
`context_management`, adaptive thinking and `output_config.effort` (left to the upstream's
default: a model that does not reason would refuse `reasoning_effort`). A block's or tool's
`cache_control` goes on the chat part or tool it becomes (the face keeps it only for bedrock,
MessagesFace.prepare); Claude Code's billing line is left out (prompt_cache.py)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from app.errors import InvalidRequest
from app.openai_types import ChatRequest, chat_request_from_wire
from app.translators.prompt_cache import is_billing_line, without_billing_line

# Top-level fields that are hints: dropped on the way to a translated upstream.
HINTS = frozenset(
    {"metadata", "context_management", "service_tier", "cache_control", "inference_geo"}
)
# Top-level fields handled below (besides model and messages).
MAPPED = frozenset(
    {
        "system",
        "max_tokens",
        "stream",
        "tools",
        "tool_choice",
        "stop_sequences",
        "temperature",
        "top_p",
        "top_k",
        "thinking",
        "output_config",
        "output_format",
    }
)
SAMPLING = ("temperature", "top_p", "top_k")
# thinking.budget_tokens -> reasoning_effort: the largest effort whose default budget fits.
EFFORT_BY_BUDGET = ((16384, "high"), (4096, "medium"), (0, "low"))
SMALLEST_BUDGET = 1024  # Anthropic's own floor
TOOL_ERROR_PREFIX = "Error: "


def chat_request(body: dict[str, Any], *, count_only: bool = False) -> ChatRequest:
    """The validated chat request for `body`; InvalidRequest names what cannot be carried.
    `count_only` (count_tokens) does not need `max_tokens`."""
    return chat_request_from_wire(chat_wire(body, count_only=count_only))


def chat_wire(body: dict[str, Any], *, count_only: bool = False) -> dict[str, Any]:
    for field in body:
        if field not in MAPPED and field not in HINTS and field not in ("model", "messages"):
            raise InvalidRequest(f"{field}: Extra inputs are not permitted", param=field)
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model: Field required", param="model")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages: at least one message is required", param="messages")
    wire: dict[str, Any] = {"model": model, "messages": system_messages(body.get("system"))}
    for position, message in enumerate(messages):
        wire["messages"] += chat_messages(message, f"messages.{position}")
    wire.update(generation_fields(body, count_only=count_only))
    if body.get("tools"):
        wire["tools"] = [chat_tool(tool, f"tools.{i}") for i, tool in enumerate(body["tools"])]
    wire.update(tool_choice_fields(body.get("tool_choice")))
    wire.update(prompt_cache_fields(body.get("metadata")))
    if body.get("stream") is True:
        wire["stream"] = True
        wire["stream_options"] = {"include_usage": True}
    return wire


PROMPT_CACHE_KEY_LIMIT = 64
"""OpenAI refuses a longer `prompt_cache_key` ("string too long. Expected a string with maximum
length 64"); Claude Code's `user_id` (a JSON object of device, account and session ids) is
longer."""


def prompt_cache_fields(metadata: Any) -> dict[str, Any]:
    """`metadata.user_id` -> `prompt_cache_key` (CONTRACT.md, "Prompt caching"): openai kinds
    relay it, so the upstream routes the conversation to a warm cache, and it names the
    conversation for affinity; the other translated kinds drop it. A longer one than OpenAI
    takes becomes a digest of it, the same on every turn."""
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str) or not user_id:
        return {}
    if len(user_id) > PROMPT_CACHE_KEY_LIMIT:
        user_id = "user_id-" + hashlib.sha256(user_id.encode()).hexdigest()[:48]
    return {"prompt_cache_key": user_id}


def generation_fields(body: dict[str, Any], *, count_only: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 1:
        fields["max_completion_tokens"] = max_tokens
    elif max_tokens is not None or not count_only:
        raise InvalidRequest("max_tokens: Field required (an integer >= 1)", param="max_tokens")
    for name in SAMPLING:
        if body.get(name) is not None:
            fields[name] = body[name]
    stops = body.get("stop_sequences")
    if stops:
        fields["stop"] = stops
    effort = reasoning_effort(body.get("thinking"))
    if effort is not None:
        fields["reasoning_effort"] = effort
    output_format = _output_format(body)
    if output_format is not None:
        fields["response_format"] = response_format(output_format)
    return fields


def _output_format(body: dict[str, Any]) -> Any:
    """`output_config.format`, or the beta's top-level `output_format` it replaced (the
    Anthropic SDK's beta still sends that; both at once is refused, as the SDK refuses it)."""
    output_config = body.get("output_config") or {}
    if not isinstance(output_config, dict):
        raise InvalidRequest(
            "output_config: Input should be a valid dictionary", param="output_config"
        )
    output_format = output_config.get("format")
    if body.get("output_format") is None:
        return output_format
    if output_format is not None:
        raise InvalidRequest(
            "Both output_format and output_config.format were provided; use only "
            "output_config.format (output_format is deprecated).",
            param="output_format",
        )
    return body["output_format"]


def reasoning_effort(thinking: Any) -> str | None:
    """`enabled` with a budget is a requirement: the effort whose budget fits it. `adaptive`
    and `disabled` leave the upstream to its default."""
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < SMALLEST_BUDGET:
        raise InvalidRequest(
            "thinking.enabled.budget_tokens: Input should be an integer greater than or equal "
            f"to {SMALLEST_BUDGET}",
            param="thinking.budget_tokens",
        )
    return next(effort for floor, effort in EFFORT_BY_BUDGET if budget >= floor)


def response_format(output_format: Any) -> dict[str, Any]:
    """Anthropic's `{"type": "json_schema", "schema": {...}}` (its only format) -> chat's
    `response_format`. Anthropic's JSON outputs always follow the schema, so the nearest
    OpenAI ask is `strict`; the schema goes as given (`$ref`/`$defs` included)."""
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        raise InvalidRequest(
            "output_config.format: only type 'json_schema' is supported",
            param="output_config.format",
        )
    schema = output_format.get("schema")
    if not isinstance(schema, dict):
        raise InvalidRequest(
            "output_config.format.schema: Input should be a valid dictionary",
            param="output_config.format.schema",
        )
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def system_messages(system: Any) -> list[dict[str, Any]]:
    """The system prompt, less Claude Code's billing line; as text parts when a block carries
    a breakpoint, so each keeps it."""
    if isinstance(system, str):
        system = without_billing_line(system)
    elif isinstance(system, list) and any(_control(block) for block in system):
        system_text(system, "system")  # the same checks
        parts = [_marked_text(block) for block in system if not _billing_block(block)]
        return [{"role": "system", "content": parts}] if parts else []
    elif isinstance(system, list) and system and _billing_block(system[0]):
        system = system[1:]
    text = system_text(system, "system")
    return [{"role": "system", "content": text}] if text else []


def _control(block: Any) -> Any:
    return block.get("cache_control") if isinstance(block, dict) else None


def _billing_block(block: Any) -> bool:
    text = block.get("text") if isinstance(block, dict) else None
    return isinstance(text, str) and is_billing_line(text)


def _marked_text(block: dict[str, Any]) -> dict[str, Any]:
    part = {"type": "text", "text": block.get("text", "")}
    if isinstance(control := _control(block), dict):
        part["cache_control"] = control
    return part


def system_text(content: Any, where: str) -> str:
    """A string, or text blocks joined by blank lines (`cache_control` is a hint)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}: Input should be a valid string or list", param=where)
    texts = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise InvalidRequest(f"{where}.{i}: only text blocks are allowed here", param=where)
        if text := block_text(block, f"{where}.{i}"):
            texts.append(text)
    return "\n\n".join(texts)


def chat_messages(message: Any, where: str) -> list[dict[str, Any]]:
    """One Anthropic message -> chat messages: a user turn's tool_result blocks become `tool`
    messages (first, as chat needs them right after the calls), its other blocks one user
    message after them; an assistant turn's text and tool_use one assistant message. A
    `system` message inside `messages` (Claude Code sends one) stays where it is."""
    if not isinstance(message, dict):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary", param=where)
    role, content = message.get("role"), message.get("content")
    if role == "system":
        return [{"role": "system", "content": system_text(content, f"{where}.content")}]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise InvalidRequest(f"{where}.content: Input should be a valid list", param=where)
    if role == "assistant":
        return [assistant_message(blocks, f"{where}.content")]
    if role == "user":
        return user_messages(blocks, f"{where}.content")
    raise InvalidRequest(f"{where}.role: Input should be 'user' or 'assistant'", param=where)


def assistant_message(blocks: list[Any], where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        kind = _block_type(block, f"{where}.{i}")
        if kind == "text":
            texts.append(block_text(block, f"{where}.{i}"))
        elif kind == "tool_use":
            given = block.get("input")  # a string: a kept thread's call that was not JSON
            arguments = given if isinstance(given, str) else orjson.dumps(given or {}).decode()
            function = {"name": block.get("name"), "arguments": arguments}
            calls.append({"id": block.get("id"), "type": "function", "function": function})
        elif kind not in ("thinking", "redacted_thinking"):  # the model's own, not for others
            raise _unsupported(kind, f"{where}.{i}")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def user_messages(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        kind = _block_type(block, f"{where}.{i}")
        if kind == "tool_result":
            text, images = tool_result_content(block, f"{where}.{i}")
            call_id = block.get("tool_use_id")
            content: Any = text
            if isinstance(_control(block), dict) and text:
                content = [{"type": "text", "text": text, "cache_control": _control(block)}]
            results.append({"role": "tool", "tool_call_id": call_id, "content": content})
            parts += images
        elif kind == "text":
            if text := block_text(block, f"{where}.{i}"):
                parts.append(_with_control({"type": "text", "text": text}, block))
        else:
            parts.append(_with_control(media_part(block, kind, f"{where}.{i}"), block))
    if not results and not parts:
        raise InvalidRequest(
            f"{where}: all messages must have non-empty content except for the optional final "
            "assistant message",
            param=where,
        )
    return results + ([{"role": "user", "content": parts}] if parts else [])


def tool_result_content(block: dict[str, Any], where: str) -> tuple[str, list[dict[str, Any]]]:
    """Its text for the `tool` message, and its images, which a chat tool message cannot
    hold, for the user message that follows. `is_error` is said in the text."""
    content = block.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        kind = _block_type(part, f"{where}.content.{i}")
        if kind == "text":
            texts.append(block_text(part, f"{where}.content.{i}"))
        else:
            images.append(media_part(part, kind, f"{where}.content.{i}"))
    text = "\n".join(texts)
    return (TOOL_ERROR_PREFIX + text if block.get("is_error") else text), images


def media_part(block: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict):
        source = {}
    if kind == "image" and source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "image" and source.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": source.get("url")}}
    if kind == "document" and source.get("type") == "base64":
        data = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "file", "file": {"file_data": data, "filename": "document.pdf"}}
    raise _unsupported(kind, where)


def chat_tool(tool: Any, where: str) -> dict[str, Any]:
    """A client tool as a function. Anthropic's server tools (web search, code execution...)
    run on Anthropic's side only."""
    if not isinstance(tool, dict):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary", param=where)
    if tool.get("type") not in (None, "custom"):
        raise InvalidRequest(
            f"{where}: the server tool type '{tool['type']}' runs only on anthropic upstreams",
            param=where,
        )
    function: dict[str, Any] = {"name": tool.get("name"), "parameters": tool.get("input_schema")}
    if tool.get("description"):
        function["description"] = tool["description"]
    return _with_control({"type": "function", "function": function}, tool)


def _with_control(part: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """`part` with the block's breakpoint, if it has one."""
    if isinstance(control := _control(block), dict):
        part["cache_control"] = control
    return part


def tool_choice_fields(choice: Any) -> dict[str, Any]:
    if choice is None:
        return {}
    kind = choice.get("type") if isinstance(choice, dict) else None
    fields: dict[str, Any] = {}
    if kind == "auto":
        fields["tool_choice"] = "auto"
    elif kind == "any":
        fields["tool_choice"] = "required"
    elif kind == "none":
        fields["tool_choice"] = "none"
    elif kind == "tool":
        fields["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    else:
        raise InvalidRequest(
            "tool_choice: type must be 'auto', 'any', 'tool' or 'none'", param="tool_choice"
        )
    if choice.get("disable_parallel_tool_use") and kind != "none":
        fields["parallel_tool_calls"] = False
    return fields


def block_text(block: dict[str, Any], where: str) -> str:
    text = block.get("text", "")
    if not isinstance(text, str):
        raise InvalidRequest(f"{where}.text: Input should be a valid string", param=where)
    return text


def _block_type(block: Any, where: str) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str):
        raise InvalidRequest(f"{where}.type: Field required", param=where)
    return kind


def _unsupported(kind: str, where: str) -> InvalidRequest:
    return InvalidRequest(
        f"{where}: '{kind}' blocks cannot be carried to this model's upstream", param=where
    )
