"""A streamed answer, as the client received it (SSE bytes), assembled into the answer the
same request would have had without `stream`: what /v1/logs/{id} shows as `response`. Runs in
the log's writer, never on the request path."""

from __future__ import annotations

from typing import Any

import orjson

from app.sse import SSEDecoder

Json = dict[str, Any]


def events(raw: bytes) -> list[Json]:
    """The JSON payloads of the stream's events (`[DONE]` and any non-JSON left out). The
    bytes are the proxy's own frames, one `data:` line an event (app/sse.py writes JSON on
    one line), so lines are read as they are; anything else goes through the full decoder."""
    payloads = []
    for line in raw.split(b"\n"):
        if line.startswith(b"data: {"):
            data = line[6:]
        elif line == b"data: [DONE]":
            continue
        elif line.startswith((b"data:", b" ")):
            return _decoded(raw)  # not the proxy's one-line framing
        else:
            continue
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(payload, dict):
            payloads.append(payload)
    return payloads


def _decoded(raw: bytes) -> list[Json]:
    decoder = SSEDecoder()
    payloads = []
    for event in decoder.feed(raw) + decoder.flush():
        try:
            payload = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(payload, dict):
            payloads.append(payload)
    return payloads


def assemble(api: str, raw: bytes) -> Json | None:
    payloads = events(raw)
    if api == "responses":
        return _responses(payloads)
    if api == "messages":
        return _messages(payloads)
    return _chat(payloads)


def _responses(payloads: list[Json]) -> Json | None:
    """The last event that carries the whole response (`response.completed`, `.failed`,
    `.incomplete`), else the last error event."""
    answer = None
    for payload in payloads:
        if isinstance(payload.get("response"), dict):
            answer = payload["response"]
        elif payload.get("type") == "error":
            answer = payload
    return answer


def _messages(payloads: list[Json]) -> Json | None:
    message: Json | None = None
    partial: dict[int, str] = {}
    for payload in payloads:
        kind = payload.get("type")
        if kind == "message_start":
            message = dict(payload.get("message") or {})
            message["content"] = []
        elif message is None:
            if kind == "error":
                return payload
        else:
            _message_event(message, partial, payload)
    if message is not None:
        for index, text in partial.items():
            _set_input(message["content"], index, text)
    return message


def _message_event(message: Json, partial: dict[int, str], payload: Json) -> None:
    kind = payload.get("type")
    if kind == "content_block_start":
        message["content"].append(dict(payload.get("content_block") or {}))
    elif kind == "content_block_delta":
        _block_delta(message["content"], partial, payload)
    elif kind == "message_delta":
        message.update(payload.get("delta") or {})
        message["usage"] = {**(message.get("usage") or {}), **(payload.get("usage") or {})}
    elif kind == "error":
        message["error"] = payload.get("error")


def _block_delta(content: list[Json], partial: dict[int, str], payload: Json) -> None:
    index, delta = payload.get("index"), payload.get("delta") or {}
    if not isinstance(index, int) or not 0 <= index < len(content):
        return
    block = content[index]
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "input_json_delta":
        partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))


def _set_input(content: list[Json], index: int, text: str) -> None:
    try:
        content[index]["input"] = orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        content[index]["input"] = text


def _chat(payloads: list[Json]) -> Json | None:
    """Chat chunks folded: each choice's content and tool calls (arguments joined in order),
    its finish reason, and the usage of the last chunk that had one."""
    answer: Json | None = None
    choices: dict[int, Json] = {}
    for chunk in payloads:
        if "error" in chunk and "choices" not in chunk:
            return chunk if answer is None else {**answer, "error": chunk["error"]}
        if answer is None:
            answer = {k: chunk.get(k) for k in ("id", "created", "model")}
            answer["object"] = "chat.completion"
        if chunk.get("usage"):
            answer["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or ():
            _fold_choice(choices, choice)
    if answer is None:
        return None
    answer["choices"] = [choices[i] for i in sorted(choices)]
    return answer


def _fold_choice(choices: dict[int, Json], choice: Json) -> None:
    index = choice.get("index", 0)
    folded = choices.setdefault(
        index,
        {"index": index, "message": {"role": "assistant", "content": None}, "finish_reason": None},
    )
    message, delta = folded["message"], choice.get("delta") or {}
    if delta.get("content"):
        message["content"] = (message["content"] or "") + delta["content"]
    for name in ("reasoning_content", "refusal"):
        if delta.get(name):
            message[name] = message.get(name, "") + delta[name]
    for call in delta.get("tool_calls") or ():
        calls = message.setdefault("tool_calls", [])
        position = call.get("index", len(calls))
        while len(calls) <= position:
            calls.append(
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
        target, function = calls[position], call.get("function") or {}
        target["id"] = call.get("id") or target["id"]
        target["function"]["name"] += function.get("name") or ""
        target["function"]["arguments"] += function.get("arguments") or ""
    if choice.get("finish_reason"):
        folded["finish_reason"] = choice["finish_reason"]
