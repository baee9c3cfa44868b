"""Is this response the mock's answer, exactly? Each check returns None when it is, else what is
wrong (one line), so speed never hides corruption.

OpenAI streams are reassembled the way openai-python's stream accumulator does it
(`lib/streaming/_deltas.py`, PROTOCOLS.md A.8): per tool-call `index`, every string field is
concatenated, so a repeated `id` or `name` shows up as the wrong id or name, exactly as a client
would see it. Arguments must reassemble to the upstream's exact text; only where the upstream
never had a text (Anthropic's non-stream `input` is an object) is the parsed JSON compared.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from bench.payload import EMBEDDING_VECTORS, PREAMBLE, TOOL_CALLS, Client, Format, ToolCall

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


def _as_openai_call(call_id: Any, name: Any, arguments: bytes | str) -> dict[str, Any]:
    text = arguments.decode() if isinstance(arguments, bytes) else arguments
    function = {"name": name, "arguments": text}
    return {"id": call_id, "type": "function", "function": function}


# --- what an OpenAI Responses API client receives (/v1/responses) -------------------------------


def responses_response(body: bytes, upstream: Format) -> Check:
    try:
        response = orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"not JSON: {_short(body[:200])}"
    if not isinstance(response, dict) or response.get("object") != "response":
        return f"not a response: {_short(body[:200])}"
    return _responses_output(response, upstream)


def _responses_output(response: dict[str, Any], upstream: Format) -> Check:
    """A finished Response: status completed, the preamble as one message, then two
    function_call items carrying the upstream's call ids, names and exact arguments."""
    if response.get("status") != "completed":
        return f"status {_short(response.get('status'))}, expected 'completed'"
    output = response.get("output")
    if not isinstance(output, list) or not output:
        return f"output {_short(output)}"
    message, *items = output
    if message.get("type") != "message" or message.get("role") != "assistant":
        return f"first output item {_short(message)} is not an assistant message"
    texts = [p.get("text") for p in message.get("content") or [] if p.get("type") == "output_text"]
    if texts != [PREAMBLE]:
        return f"message text {_short(texts)}, expected the preamble"
    calls = []
    for item in items:
        if item.get("type") != "function_call" or item.get("status") != "completed":
            return f"output item {_short(item)} is not a completed function_call"
        calls.append(_as_openai_call(item.get("call_id"), item.get("name"), item.get("arguments")))
    return _compare_calls(calls, upstream, exact=upstream == "openai")


class _ResponsesStreamState:
    """Events in order (sequence_number 0, 1, ...), each `event:` name its data's type; text and
    argument deltas accumulated per output_index, and checked against their `.done` events."""

    def __init__(self) -> None:
        self.count = 0
        self.deltas: dict[int, str] = {}
        self.completed: dict[str, Any] | None = None

    def feed(self, event: str | None, payload: Any) -> Check:
        if not isinstance(payload, dict) or event != payload.get("type"):
            return f"event name {event!r} differs from data.type {_short(payload)[:80]}"
        if payload.get("sequence_number") != self.count:
            return f"sequence_number {payload.get('sequence_number')!r}, expected {self.count}"
        self.count += 1
        if self.completed is not None:
            return f"{event} after response.completed"
        if event in ("response.output_text.delta", "response.function_call_arguments.delta"):
            index = payload["output_index"]
            self.deltas[index] = self.deltas.get(index, "") + payload["delta"]
        elif event in ("response.output_text.done", "response.function_call_arguments.done"):
            whole = payload.get("text" if event == "response.output_text.done" else "arguments")
            if whole != self.deltas.get(payload["output_index"], ""):
                return f"{event} {_short(whole)} is not its deltas joined"
        elif event in ("response.failed", "response.incomplete", "error"):
            return f"{event} in the stream: {_short(payload)}"
        elif event == "response.completed":
            self.completed = payload["response"]
        return None

    def verify(self, upstream: Format) -> Check:
        if self.completed is None:
            return "stream ended without response.completed"
        output = self.completed.get("output") or []
        calls = [
            _as_openai_call(item.get("call_id"), item.get("name"), self.deltas.get(i, ""))
            for i, item in enumerate(output)
            if item.get("type") == "function_call"
        ]
        streamed = _compare_calls(calls, upstream, exact=True)
        if streamed:
            return f"streamed deltas: {streamed}"
        if self.deltas.get(0) != PREAMBLE:
            return f"streamed text {_short(self.deltas.get(0))}, expected the preamble"
        return _responses_output(self.completed, upstream)


def responses_stream(body: bytes, upstream: Format) -> Check:
    state = _ResponsesStreamState()
    for event, data in sse_data(body):
        if data == b"[DONE]":
            return "a Responses stream has no data: [DONE]"
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            return f"event is not JSON: {_short(data[:200])}"
        wrong = state.feed(event, payload)
        if wrong:
            return wrong
    return state.verify(upstream)


# --- what an embeddings client receives (/v1/embeddings) -------------------------------------

_PACKED_VECTORS = tuple(
    base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in EMBEDDING_VECTORS
)


def _embeddings(body: bytes, expected: tuple[Any, ...]) -> Check:
    answer = orjson.loads(body)
    if answer.get("object") != "list" or not isinstance(answer.get("data"), list):
        return f"not an embeddings list: {_short(body[:200])}"
    got = [item.get("embedding") for item in answer["data"]]
    if len(got) != len(expected):
        return f"{len(got)} embeddings, expected {len(expected)}"
    if [item.get("index") for item in answer["data"]] != list(range(len(expected))):
        return "embeddings out of order"
    for index, (vector, want) in enumerate(zip(got, expected, strict=True)):
        if vector != want:
            return f"embedding {index} differs from the upstream's: {_short(vector)[:80]}"
    usage = answer.get("usage") or {}
    if not isinstance(usage.get("prompt_tokens"), int):
        return "no usage.prompt_tokens"
    return None


def embeddings_floats(body: bytes, upstream: Format) -> Check:
    return _embeddings(body, EMBEDDING_VECTORS)


def embeddings_base64(body: bytes, upstream: Format) -> Check:
    return _embeddings(body, _PACKED_VECTORS)


def checker(client: Client, *, stream: bool, packed: bool = False) -> CheckFn:
    """The check for responses in `client` format (`packed`: embeddings asked as base64)."""
    if client == "embeddings":
        return embeddings_base64 if packed else embeddings_floats
    if client == "openai":
        return openai_stream if stream else openai_completion
    if client == "responses":
        return responses_stream if stream else responses_response
    return anthropic_stream if stream else anthropic_message
