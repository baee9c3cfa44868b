"""Is this response the mock's answer, exactly? Each check returns None when it is, else what is
wrong (one line), so speed never hides corruption.

OpenAI streams are reassembled the way openai-python's stream accumulator does it
(`lib/streaming/_deltas.py`, PROTOCOLS.md A.8): per tool-call `index`, every string field is
concatenated, so a repeated `id` or `name` shows up as the wrong id or name, exactly as a client
would see it. Arguments must reassemble to the upstream's exact text; only where the upstream
never had a text (Anthropic's non-stream `input` is an object) is the parsed JSON compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from bench.payload import PREAMBLE, TOOL_CALLS, Format, ToolCall

Check = str | None
CheckFn = Callable[[bytes, Format], Check]


def sse_data(body: bytes) -> Iterator[tuple[str | None, bytes]]:
    """(event name, data) of each SSE event in a complete body."""
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = None, []
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line.startswith(b"event:"):
                event = line[6:].strip().decode()
        if data:
            yield event, b"\n".join(data)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _compare_calls(got: list[dict[str, Any]], upstream: Format, *, exact: bool) -> Check:
    expected = TOOL_CALLS[upstream]
    if len(got) != len(expected):
        return f"{len(got)} tool calls, expected {len(expected)}"
    for i, (call, want) in enumerate(zip(got, expected, strict=True)):
        wrong = _compare_call(call, want, exact=exact)
        if wrong:
            return f"tool call {i}: {wrong}"
    return None


def _compare_call(call: dict[str, Any], want: ToolCall, *, exact: bool) -> Check:
    function = call.get("function") or {}
    got = (call.get("id"), call.get("type"), function.get("name"))
    if got != (want.id, "function", want.name):
        return f"(id, type, name) {_short(got)}, expected {(want.id, 'function', want.name)!r}"
    return _compare_arguments(function.get("arguments"), want, exact=exact)


def _compare_arguments(arguments: Any, want: ToolCall, *, exact: bool) -> Check:
    if not isinstance(arguments, str):
        return f"arguments are {type(arguments).__name__}, not a JSON string"
    if exact:
        if arguments == want.arguments:
            return None
        return f"arguments {_short(arguments)} differ from the upstream's {_short(want.arguments)}"
    try:
        parsed = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return f"arguments are not JSON: {_short(arguments)}"
    return None if parsed == want.input else f"arguments {_short(arguments)} parse differently"


# --- what an OpenAI client receives ------------------------------------------------------------


def openai_completion(body: bytes, upstream: Format) -> Check:
    try:
        completion = orjson.loads(body)
        choice = completion["choices"][0]
        message = choice["message"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return f"not a chat.completion: {_short(body[:200])}"
    if choice.get("finish_reason") != "tool_calls":
        return f"finish_reason {_short(choice.get('finish_reason'))}, expected 'tool_calls'"
    if message.get("content") != PREAMBLE:
        return f"content {_short(message.get('content'))}, expected the preamble"
    return _compare_calls(message.get("tool_calls") or [], upstream, exact=upstream == "openai")


class _StreamState:
    """openai-python's accumulation of chat.completion.chunk deltas, reduced to what we check."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reasons: list[str] = []

    def feed(self, chunk: dict[str, Any]) -> Check:
        if chunk.get("error"):
            return f"error event in the stream: {_short(chunk['error'])}"
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                return f"choice index {_short(choice.get('index'))}"
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text += delta["content"]
            for tool_delta in delta.get("tool_calls") or []:
                wrong = self._feed_tool(tool_delta)
                if wrong:
                    return wrong
            if choice.get("finish_reason") is not None:
                self.finish_reasons.append(choice["finish_reason"])
        return None

    def _feed_tool(self, tool_delta: dict[str, Any]) -> Check:
        index = tool_delta.get("index")
        if not isinstance(index, int):
            return f"tool-call delta without an int index: {_short(tool_delta)}"
        call = self.calls.setdefault(index, {"id": "", "type": None, "function": {"name": ""}})
        function = call["function"]
        if isinstance(tool_delta.get("id"), str):
            call["id"] += tool_delta["id"]
        if tool_delta.get("type") is not None:
            call["type"] = tool_delta["type"]
        delta_function = tool_delta.get("function") or {}
        if isinstance(delta_function.get("name"), str):
            function["name"] += delta_function["name"]
        fragment = delta_function.get("arguments")
        if fragment is not None:
            if not isinstance(fragment, str):
                return f"argument fragment is {type(fragment).__name__}, not a string"
            function["arguments"] = function.get("arguments", "") + fragment
        return None

    def verify(self, upstream: Format) -> Check:
        if self.finish_reasons[-1:] != ["tool_calls"] or len(set(self.finish_reasons)) != 1:
            return f"finish_reason(s) {self.finish_reasons}, expected 'tool_calls'"
        if self.text != PREAMBLE:
            return f"streamed content {_short(self.text)}, expected the preamble"
        if sorted(self.calls) != list(range(len(self.calls))):
            return f"tool-call indexes {sorted(self.calls)} are not 0, 1, ..."
        calls = [self.calls[i] for i in sorted(self.calls)]
        return _compare_calls(calls, upstream, exact=True)


def openai_stream(body: bytes, upstream: Format) -> Check:
    state, done = _StreamState(), False
    for _, data in sse_data(body):
        if done:
            return "data after [DONE]"
        if data == b"[DONE]":
            done = True
            continue
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            return f"event is not JSON: {_short(data[:200])}"
        wrong = state.feed(chunk)
        if wrong:
            return wrong
    return state.verify(upstream) if done else "stream ended without data: [DONE]"


# --- what an Anthropic client receives (the mock hit directly, as the baseline) ----------------


def anthropic_message(body: bytes, upstream: Format) -> Check:
    try:
        message = orjson.loads(body)
        blocks = message["content"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return f"not a message: {_short(body[:200])}"
    if message.get("stop_reason") != "tool_use":
        return f"stop_reason {_short(message.get('stop_reason'))}"
    if not blocks or blocks[0] != {"type": "text", "text": PREAMBLE}:
        return "first block is not the preamble"
    calls = [_as_openai_call(b["id"], b["name"], orjson.dumps(b["input"])) for b in blocks[1:]]
    return _compare_calls(calls, upstream, exact=False)


def anthropic_stream(body: bytes, upstream: Format) -> Check:
    blocks: dict[int, dict[str, Any]] = {}
    stop_reason, stopped = None, False
    for event, data in sse_data(body):
        payload = orjson.loads(data)
        if event != payload.get("type"):
            return f"event name {event!r} differs from data.type {payload.get('type')!r}"
        if event == "content_block_start":
            blocks[payload["index"]] = dict(payload["content_block"], partial="")
        elif event == "content_block_delta" and payload["delta"]["type"] == "input_json_delta":
            blocks[payload["index"]]["partial"] += payload["delta"]["partial_json"]
        elif event == "content_block_delta":
            blocks[payload["index"]]["text"] += payload["delta"]["text"]
        elif event == "message_delta":
            stop_reason = payload["delta"]["stop_reason"]
        elif event == "message_stop":
            stopped = True
    if not stopped or stop_reason != "tool_use":
        return f"no message_stop, or stop_reason {stop_reason!r}"
    if blocks.get(0, {}).get("text") != PREAMBLE:
        return "text block is not the preamble"
    calls = [
        _as_openai_call(b["id"], b["name"], b["partial"].encode())
        for i, b in sorted(blocks.items())
        if b["type"] == "tool_use"
    ]
    return _compare_calls(calls, upstream, exact=True)


def _as_openai_call(call_id: str, name: str, arguments: bytes) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments.decode()}
    return {"id": call_id, "type": "function", "function": function}


def checker(client: Format, *, stream: bool) -> CheckFn:
    """The check for responses in `client` format."""
    if client == "openai":
        return openai_stream if stream else openai_completion
    return anthropic_stream if stream else anthropic_message
