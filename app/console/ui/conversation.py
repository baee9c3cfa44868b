"""One logged request as a conversation for /ui/requests/{id}: each turn's role and text, and
the answer's tool calls with their arguments and verdicts, for the chat, Responses and
Messages shapes alike. Plain data: the template escapes every string."""

from __future__ import annotations

from typing import Any

import orjson

Turn = dict[str, Any]


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_part(part) for part in content]
        return "\n".join(part for part in parts if part)
    return orjson.dumps(content).decode()


def _part(part: Any) -> str:
    if isinstance(part, dict):
        for name in ("text", "thinking", "content", "output"):
            if isinstance(part.get(name), str):
                return str(part[name])
        if part.get("type") in ("tool_use", "tool_result", "function_call"):
            return ""
    return orjson.dumps(part).decode() if not isinstance(part, str) else part


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def request_turns(api: str, body: Any) -> list[Turn]:
    if not isinstance(body, dict):
        return []
    turns: list[Turn] = []
    if body.get("system") or body.get("instructions"):
        turns.append(
            {"role": "system", "text": _text(body.get("system") or body.get("instructions"))}
        )
    items = body.get("messages") if api != "responses" else body.get("input")
    if isinstance(items, str):
        return [*turns, {"role": "user", "text": items, "calls": []}]
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            role = str(item.get("role") or item.get("type") or "item")
            text = _text(item.get("content", item.get("output")))
            turns.append({"role": role, "text": text, "calls": _message_calls(item)})
    return turns


def _message_calls(item: dict[str, Any]) -> list[dict[str, Any]]:
    calls = []
    for call in item.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, dict) else {}
        calls.append(
            {"name": function.get("name"), "arguments": _arguments(function.get("arguments"))}
        )
    if item.get("type") == "function_call":
        calls.append({"name": item.get("name"), "arguments": _arguments(item.get("arguments"))})
    content = item.get("content")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "tool_use":
            calls.append({"name": part.get("name"), "arguments": _arguments(part.get("input"))})
    return calls


def answer_turn(api: str, body: Any, verdicts: list[dict[str, Any]]) -> Turn | None:
    """The answer's text and its tool calls, each with the verdict logged for it (in order)."""
    if not isinstance(body, dict):
        return None
    if api == "chat":
        choices = body.get("choices") or [{}]
        message = choices[0].get("message") or {} if isinstance(choices[0], dict) else {}
        text, calls = _text(message.get("content")), _message_calls(message)
    elif api == "messages":
        text, calls = _text(body.get("content")), _message_calls(body)
    elif api == "responses":
        output = [item for item in body.get("output") or () if isinstance(item, dict)]
        text = "\n".join(
            _text(item.get("content")) for item in output if item.get("type") == "message"
        )
        calls = [c for item in output for c in _message_calls(item)]
    else:
        return {"role": "answer", "text": f"{len(body.get('data') or ())} embeddings", "calls": []}
    for index, call in enumerate(calls):
        call["verdict"] = verdicts[index] if index < len(verdicts) else None
    return {"role": "answer", "text": text, "calls": calls}
