"""A chat answer -> the Responses API's `Response` object, and the item builders the stream
writer shares with it, so a stream's `response.completed` carries exactly what the non-stream
call returns (CONTRACT.md, "OpenAI Responses API")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.faces.responses.echo import (
    echoed_metadata,
    echoed_reasoning,
    echoed_text,
    echoed_tools,
)
from app.faces.responses.reasoning import encrypted_content
from app.faces.responses.tools import ToolNames

Item = dict[str, Any]

# Chat finish_reason -> why a response is incomplete; any other reason completes it.
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
ECHOED = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "previous_response_id",
    "temperature",
    "top_p",
)


def response_id(completion_id: str) -> str:
    """From the proxy's own id for the attempt, never the upstream's: some upstreams give every
    answer the same id (the demo model the same request the same one), and stored responses
    and their items are kept by id."""
    return "resp_" + completion_id.removeprefix("chatcmpl-")


@dataclass(slots=True)
class ItemIds:
    """Ids for one response's items: its own hex plus a count, so every id is unique across
    responses (an `item_reference` finds its item by id alone)."""

    base: str
    count: int = 0

    def next(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.base}{self.count:03d}"


def response_shell(
    body: dict[str, Any], *, resp_id: str, created: int, model: str
) -> dict[str, Any]:
    """Everything but the output, status and usage: the request's own settings echoed."""
    shell: dict[str, Any] = {
        "id": resp_id,
        "object": "response",
        "created_at": created,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True) is not False,
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": echoed_tools(body.get("tools")),
        "text": echoed_text(body.get("text")),
        "reasoning": echoed_reasoning(body.get("reasoning")),
        "store": body.get("store") is not False,
        "metadata": echoed_metadata(body.get("metadata")),
    }  # no `usage` until the end: the spec has it an object or absent, never null
    for name in ECHOED:
        shell[name] = body.get(name)
    return shell


def finished_response(
    shell: dict[str, Any], output: list[Item], finish_reason: Any, usage: Any
) -> dict[str, Any]:
    reason = INCOMPLETE.get(finish_reason)
    response = {**shell, "output": output, "usage": responses_usage(usage)}
    response["status"] = "completed" if reason is None else "incomplete"
    if reason is not None:
        response["incomplete_details"] = {"reason": reason}
    return response


def responses_usage(usage: Any) -> dict[str, Any]:
    """Chat usage in the Responses API's terms; its `cost` (a priced model's) kept."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    converted = {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.get("total_tokens") or prompt + completion,
    }
    if "cost" in usage:
        converted["cost"] = usage["cost"]
    return converted


def reasoning_item(item_id: str, text: str, blocks: list[dict[str, Any]] | None) -> Item:
    item: Item = {"id": item_id, "type": "reasoning", "summary": [], "status": "completed"}
    item["content"] = [{"type": "reasoning_text", "text": text}] if text else []
    if blocks:
        item["encrypted_content"] = encrypted_content(blocks)
    return item


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def refusal_part(refusal: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": refusal}


def message_item(item_id: str, parts: list[dict[str, Any]], status: str = "completed") -> Item:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": parts,
    }


def call_item_id(ids: ItemIds, upstream_name: str, names: ToolNames) -> str:
    return ids.next("ctc" if names.origin(upstream_name).kind == "custom" else "fc")


def call_item(
    item_id: str, call_id: str, upstream_name: str, arguments: str, names: ToolNames
) -> Item:
    """A chat tool call as the item type the client offered: a `custom` tool's call carries
    the string its bridged function got as `input`; a namespaced one its own name."""
    origin = names.origin(upstream_name)
    item: Item = {"id": item_id, "type": "function_call", "call_id": call_id}
    if origin.kind == "custom":
        item.update(type="custom_tool_call", name=origin.name, input=custom_input(arguments))
    else:
        item.update(name=origin.name, arguments=arguments)
    item["status"] = "completed"
    if origin.namespace is not None:
        item["namespace"] = origin.namespace
    return item


def custom_input(arguments: str) -> str:
    """The bridged function's `input`; arguments that are not the bridge's object (a model
    that ignored the schema) are passed on as the input itself rather than lost."""
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    given = parsed.get("input") if isinstance(parsed, dict) else None
    return given if isinstance(given, str) else arguments


def without_encrypted(item: Item) -> Item:
    return {name: value for name, value in item.items() if name != "encrypted_content"}


def presented(response: dict[str, Any], *, show_encrypted: bool) -> dict[str, Any]:
    """A response as the client sees it: reasoning items carry `encrypted_content` only when
    the request's `include` asked for it (the stored copy always keeps it)."""
    output = response["output"]
    if show_encrypted or not any("encrypted_content" in item for item in output):
        return response
    return {**response, "output": [without_encrypted(item) for item in output]}


def output_items(completion: dict[str, Any], ids: ItemIds, names: ToolNames) -> list[Item]:
    """Reasoning, then the message, then one item per call: the order every upstream
    produces them in."""
    message = completion["choices"][0]["message"]
    items: list[Item] = []
    text, blocks = message.get("reasoning_content") or "", message.get("thinking_blocks")
    if text or blocks:
        items.append(reasoning_item(ids.next("rs"), text, blocks))
    if message.get("content"):
        finish = completion["choices"][0].get("finish_reason")
        status = "incomplete" if finish in INCOMPLETE else "completed"
        items.append(message_item(ids.next("msg"), [text_part(message["content"])], status))
    if message.get("refusal"):  # its own message, as a stream sends it
        items.append(message_item(ids.next("msg"), [refusal_part(message["refusal"])]))
    for call in message.get("tool_calls") or ():
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        item_id = call_item_id(ids, name, names)
        items.append(call_item(item_id, call["id"], name, arguments, names))
    return items
