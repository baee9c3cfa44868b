"""Responses input items -> chat messages, in order.

Responses keeps each part of an assistant turn as its own item (reasoning, the message, each
function call); chat wants one assistant message holding the text, the calls and (for
Anthropic) the thinking blocks, followed by one `tool` message per call output. A new assistant
message starts whenever a turn's parts would otherwise come out of order: text or reasoning
after calls, or anything after the call outputs."""

from __future__ import annotations

from typing import Any

import orjson

from app.errors import InvalidRequest
from app.faces.responses.compaction import ITEM, TRIGGER, summary_message, summary_of
from app.faces.responses.mcp_history import (
    DENIED,
    MCP_ITEM_TYPES,
    chat_call_id,
    mcp_function,
    told_model,
)
from app.faces.responses.reasoning import thinking_blocks
from app.faces.responses.tools import upstream_name
from app.translators.message_parts import tool_answer_fault

Message = dict[str, Any]
INSTRUCTION_ROLES = ("system", "developer")
CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
_WHAT = {"function_call": "function call", "custom_tool_call": "custom tool call"}


class History:
    """Feed items with `add`; `messages` holds the chat messages once `close` has run."""

    __slots__ = ("_approvals", "_assistant", "_images", "_sources", "messages", "offered")

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.offered: list[tuple[list[Any], str]] = []
        """`additional_tools` items' tools, with where each list was: offered like `tools`."""
        self._assistant: Message | None = None
        self._approvals: dict[str, dict[str, Any]] = {}  # approval requests by id
        self._images: list[dict[str, Any]] = []  # from tool outputs, for a user message after
        self._sources: dict[str, tuple[str, str]] = {}  # "call ID" / "output N" -> (where, what)

    def add(self, item: Any, where: str) -> None:
        if not isinstance(item, dict):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary", param=where)
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise InvalidRequest(f"{where}.type: Input should be a valid string", param=where)
        if kind == "message":
            self._message(item, where)
        elif kind in CALL_TYPES:
            self._call(item, kind, where)
        elif kind in OUTPUT_TYPES:
            self._output(item, where)
        elif kind == "reasoning":
            self._reasoning(item)
        else:
            self._rarer(item, kind, where)

    def _rarer(self, item: dict[str, Any], kind: str, where: str) -> None:
        """The items a plain tool loop never sends: MCP's, Codex's tools and compaction."""
        if kind in MCP_ITEM_TYPES:
            self._mcp(item, kind, where)
        elif kind == "additional_tools":
            self._additional_tools(item, where)
        elif kind in (ITEM, TRIGGER):
            self._compaction(item, kind, where)
        elif kind == "item_reference":
            raise InvalidRequest(f"{where}: item '{item.get('id')}' was not found", param=where)
        else:
            raise InvalidRequest(
                f"{where}: '{kind}' items come from tools that run only on OpenAI's side",
                param=where,
            )

    def close(self) -> list[Message]:
        """The messages, once every call has its output and every output its call (the check
        every translated kind makes on chat, message_parts.tool_answer_fault), refused in the
        Responses API's words, naming the item at fault."""
        self._end_turn()
        self._flush_images()
        fault = tool_answer_fault(
            [
                (position, message["role"], _ids(message))
                for position, message in enumerate(self.messages)
                if message["role"] not in INSTRUCTION_ROLES
            ]
        )
        if fault is not None and fault.unanswered:
            where, what = self._sources.get(f"call {fault.ids[0]}", ("input", "function call"))
            raise InvalidRequest(f"No tool output found for {what} {fault.ids[0]}.", param=where)
        if fault is not None:
            where, what = self._sources.get(f"output {fault.position}", ("input", "function call"))
            raise InvalidRequest(
                f"No tool call found for {what} output with call_id {fault.ids[0]}.", param=where
            )
        return self.messages

    def _message(self, item: dict[str, Any], where: str) -> None:
        role, content = item.get("role"), item.get("content")
        if role == "assistant":
            text = _joined_text(content, f"{where}.content", ("output_text", "refusal"))
            turn = self._turn(fresh=self._assistant is not None and "tool_calls" in self._assistant)
            turn["content"] = (turn.get("content") or "") + text
            return
        self._end_turn()
        self._flush_images()
        if role in INSTRUCTION_ROLES and isinstance(content, list) and _marked(content):
            parts = [_user_part(part, f"{where}.content.{i}") for i, part in enumerate(content)]
            self.messages.append({"role": role, "content": parts})
        elif role in INSTRUCTION_ROLES:
            text = _joined_text(content, f"{where}.content", ("input_text",))
            self.messages.append({"role": role, "content": text})
        elif role == "user":
            self.messages.append({"role": "user", "content": _user_content(content, where)})
        else:
            raise InvalidRequest(
                f"{where}.role: Input should be 'user', 'assistant', 'system' or 'developer'",
                param=f"{where}.role",
            )

    def _call(self, item: dict[str, Any], kind: str, where: str) -> None:
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise InvalidRequest(f"{where}: call_id and name are required", param=where)
        arguments = item.get("arguments")
        if kind == "custom_tool_call":
            arguments = orjson.dumps({"input": item.get("input") or ""}).decode()
        elif not isinstance(arguments, str):
            raise InvalidRequest(f"{where}.arguments: Input should be a valid string", param=where)
        self._flush_images()
        self._sources.setdefault(f"call {call_id}", (where, _WHAT[kind]))
        function = {"name": upstream_name(name, item.get("namespace")), "arguments": arguments}
        turn = self._turn(fresh=False)
        turn.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": function}
        )

    def _output(self, item: dict[str, Any], where: str) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidRequest(f"{where}.call_id: Field required", param=f"{where}.call_id")
        self._end_turn()
        output = item.get("output")
        if isinstance(output, str):
            text = output
        else:
            text, images = _output_parts(output, f"{where}.output")
            self._images += images
        what = _WHAT["custom_tool_call" if item.get("type") == OUTPUT_TYPES[1] else "function_call"]
        self._sources[f"output {len(self.messages)}"] = (where, what)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def _additional_tools(self, item: dict[str, Any], where: str) -> None:
        """Codex's way of offering its tools to its newest models: no message, only tools
        (read by the caller with the request's `tools`); its place in the input is kept
        only in the stored input, since chat tools are offered for the whole request."""
        if item.get("role", "developer") != "developer":
            raise InvalidRequest(
                f"{where}.role: Input should be 'developer'", param=f"{where}.role"
            )
        tools = item.get("tools")
        if not isinstance(tools, list):
            where = f"{where}.tools"
            raise InvalidRequest(f"{where}: Input should be a valid list", param=where)
        self.offered.append((tools, f"{where}.tools"))

    def _mcp(self, item: dict[str, Any], kind: str, where: str) -> None:
        """An `mcp_call` is a call and its result; a denied approval the call and the denial;
        a tool list, a pending or approved approval (its `mcp_call` follows) nothing."""
        if kind == "mcp_approval_request":
            if not isinstance(item.get("id"), str):
                raise InvalidRequest(f"{where}.id: Field required (a string)", param=f"{where}.id")
            self._approvals[item["id"]] = item
            return
        approval = item.get("approval_request_id")
        if approval is not None and not isinstance(approval, str):
            where = f"{where}.approval_request_id"
            raise InvalidRequest(f"{where}: Input should be a valid string", param=where)
        if kind == "mcp_call":
            self._mcp_result(item, item, told_model(item), where)
        elif kind == "mcp_approval_response" and item.get("approve") is False:
            request = self._approvals.get(str(item.get("approval_request_id")))
            if request is not None:
                self._mcp_result(request, item, DENIED, where)

    def _mcp_result(
        self, call: dict[str, Any], item: dict[str, Any], text: str, where: str
    ) -> None:
        function = mcp_function(call)
        call_id = call.get("id")
        if function is None or not isinstance(call_id, str):
            raise InvalidRequest(
                f"{where}: id, server_label, name and arguments are required", param=where
            )
        call_id = chat_call_id(call_id)
        self._flush_images()
        turn = self._turn(fresh=False)
        turn.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": function}
        )
        self._end_turn()
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def _compaction(self, item: dict[str, Any], kind: str, where: str) -> None:
        """Our `compaction` item is its summary, in its place; one we did not make (OpenAI's
        own encrypted one) cannot be read here, and silently dropping it would lose the
        conversation it stands for. A trigger is answered by the caller when it comes last
        in a request's input; anywhere else it is nothing to the model."""
        if kind == TRIGGER:
            return
        summary = summary_of(item.get("encrypted_content"))
        if summary is None:
            name = _bracketed(where)
            raise InvalidRequest(
                f"{name}: this compaction item was not made by ToolRelay (its "
                "encrypted_content cannot be read here); send the conversation it replaced, "
                "or compact it again through ToolRelay",
                param=name,
            )
        self._end_turn()
        self._flush_images()
        self.messages.append(summary_message(summary))

    def _reasoning(self, item: dict[str, Any]) -> None:
        """Only Anthropic's blocks round-trip (in `encrypted_content`); reasoning text alone
        has no place in a chat request and is left out, as chat clients leave it out."""
        blocks = thinking_blocks(item.get("encrypted_content"))
        if blocks is None:
            return
        self._flush_images()
        fresh = self._assistant is not None and bool(
            self._assistant.get("tool_calls") or self._assistant.get("content")
        )
        turn = self._turn(fresh=fresh)
        turn.setdefault("thinking_blocks", []).extend(blocks)

    def _turn(self, *, fresh: bool) -> Message:
        if fresh or self._assistant is None:
            self._end_turn()
            self._assistant = {"role": "assistant", "content": None}
        return self._assistant

    def _end_turn(self) -> None:
        if self._assistant is not None:
            self.messages.append(self._assistant)
            self._assistant = None

    def _flush_images(self) -> None:
        if self._images:
            self.messages.append({"role": "user", "content": self._images})
            self._images = []


def _bracketed(where: str) -> str:
    """`input.3` -> `input[3]`: how OpenAI's errors name an item."""
    head, _, position = where.rpartition(".")
    return f"{head}[{position}]" if position.isdigit() else where


def _ids(message: Message) -> tuple[str, ...]:
    """An assistant message's call ids, or the id a tool message answers."""
    if message["role"] == "tool":
        return (message["tool_call_id"],)
    return tuple(call["id"] for call in message.get("tool_calls") or ())


def _joined_text(content: Any, where: str, part_types: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}: Input should be a valid string or list", param=where)
    texts = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in part_types:
            raise InvalidRequest(
                f"{where}.{i}.type: Input should be one of {', '.join(part_types)}",
                param=f"{where}.{i}",
            )
        text = part.get("refusal") if kind == "refusal" else part.get("text")
        if not isinstance(text, str):
            raise InvalidRequest(f"{where}.{i}: text should be a valid string", param=where)
        texts.append(text)
    return "".join(texts)


def _user_content(content: Any, where: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(
            f"{where}.content: Input should be a valid string or list", param=f"{where}.content"
        )
    return [_user_part(part, f"{where}.content.{i}") for i, part in enumerate(content)]


def _marked(content: list[Any]) -> bool:
    """Instruction parts carrying a breakpoint stay parts (each keeps its `cache_control`)."""
    return any(
        isinstance(part, dict) and part.get("type") == "input_text" and "cache_control" in part
        for part in content
    )


def _user_part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "input_text" and isinstance(part.get("text"), str):
        if isinstance(part.get("cache_control"), dict):  # the client's breakpoint, kept
            return {"type": "text", "text": part["text"], "cache_control": part["cache_control"]}
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") in ("low", "high", "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file" and (part.get("file_data") or part.get("file_id")):
        fields = ("file_data", "file_id", "filename")
        return {"type": "file", "file": {name: part[name] for name in fields if part.get(name)}}
    raise InvalidRequest(
        f"{where}: expected input_text with text, input_image with an image_url, or "
        "input_file with file_data or file_id",
        param=where,
    )


def _output_parts(output: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool output given as parts: its text for the `tool` message, and its images, which a
    chat tool message cannot hold, for a user message after the outputs."""
    if not isinstance(output, list):
        raise InvalidRequest(f"{where}: Input should be a valid string or list", param=where)
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for i, part in enumerate(output):
        converted = _user_part(part, f"{where}.{i}")
        if converted["type"] == "text":
            texts.append(converted["text"])
        else:
            images.append(converted)
    return "\n".join(texts), images
