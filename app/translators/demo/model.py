"""The built-in `demo` upstream: a deterministic model that speaks the OpenAI wire format
in-process, so a newcomer gets a working proxy and a real streamed tool call with no account.

It is served as an *upstream*: the openai-kind translator builds the request body and parses
the answer exactly as it would a real OpenAI server's, so the demo runs the proxy's real
pipeline. `serve` is a pure function of the body's bytes:

- with tools offered (tool_choice not "none") and no tool results to answer, it calls one
  tool (the named one, else the first) with arguments valid against its schema; under a
  forced tool_choice it keeps calling, walking through the tools (choice.py);
- with `response_format` asking for JSON, it answers JSON valid against the schema
  (structured.py), after tool results too;
- otherwise, after tool results, it answers with text that quotes them, so a client's tool
  loop closes; else it greets the user and echoes the start of their last message.

"Tokens" are whitespace-separated words; `max_tokens` / `max_completion_tokens` cut text
with finish_reason `length`. A tool call is always sent whole: cut arguments would be
invalid JSON, which no demo should teach a client to expect.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import string
from typing import Any

import orjson

from app.errors import error_body
from app.openai_types import FinishReason, ToolCallOut, Usage
from app.sse import DONE_FRAME, data_frame
from app.translators.base import Chunk
from app.translators.chunks import ChunkBuilder, make_completion, make_usage, tool_call
from app.translators.demo.behaviours import (
    SLOPPY_MODEL,
    TEXT_MODEL,
    as_text,
    broken_arguments,
    sloppy_turn,
)
from app.translators.demo.choice import chosen_function
from app.translators.demo.schema_sample import sample
from app.translators.demo.structured import structured_text

DEMO_CREATED = 1735689600
"""`created` of every demo answer (2025-01-01T00:00:00Z). A clock would make the same request
give different bytes; a fixed instant keeps the demo a pure function, so its transcripts and
tests compare exactly."""
DEFAULT_MODEL = "demo"
ECHO_WORDS = 12
RESULT_CHARS = 200
FRAGMENT_SIZES = (3, 7, 4, 9, 5, 2, 8)
"""Where streamed arguments are cut: uneven widths that fall mid-key and mid-string, as real
upstreams' token-sized fragments do, so clients' reassembly is exercised."""
STREAM_FIELDS = frozenset({"stream", "stream_options"})
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
_BASE62 = string.digits + string.ascii_letters
_WORD_PIECE = re.compile(r"\s*\S+")

ServeResult = tuple[int, str, list[bytes]]


@dataclasses.dataclass(frozen=True, slots=True)
class DemoReply:
    """One answer before it takes a wire form: the stream and the non-stream answer are both
    rendered from it, so the stream folds to exactly the non-stream answer."""

    pieces: tuple[str, ...]
    """Word-sized text pieces (each with its leading whitespace): they concatenate to the text."""
    call: ToolCallOut | None
    finish_reason: FinishReason
    usage: Usage


def serve(
    body: bytes, *, created: int = DEMO_CREATED, completion_id: str | None = None
) -> ServeResult:
    """The demo upstream: request body -> (status, content type, body parts). A stream's parts
    are its SSE frames, ending with `data: [DONE]`; a non-stream answer is one JSON part.

    The completion id defaults to `chatcmpl-demo-` + a hash of the request without its stream
    fields, so one conversation gets the same id (and tool call ids) streamed or not.
    """
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        request = None
    if not isinstance(request, dict):
        message = "The demo model needs a JSON object as the request body."
        error = error_body(message, "invalid_request_error", None, None)
        return 400, JSON_TYPE, [orjson.dumps(error)]
    key = request_key(request)
    model = request.get("model")
    builder = ChunkBuilder(
        completion_id or f"chatcmpl-demo-{key[:16]}",
        created,
        model if isinstance(model, str) and model else DEFAULT_MODEL,
    )
    reply = answer(request, key)
    if request.get("stream") is True:
        return 200, SSE_TYPE, stream_frames(builder, reply, include_usage=_include_usage(request))
    return 200, JSON_TYPE, [orjson.dumps(completion(builder, reply))]


def request_key(request: dict[str, Any]) -> str:
    """A hex digest of the request minus `stream` / `stream_options`: the seed of every id."""
    semantic = {name: field for name, field in request.items() if name not in STREAM_FIELDS}
    return hashlib.sha256(orjson.dumps(semantic, option=orjson.OPT_SORT_KEYS)).hexdigest()


def answer(request: dict[str, Any], key: str) -> DemoReply:
    """What the demo model says to `request`: call a tool when one is due (choice.py), else
    answer: JSON when `response_format` asks for it (structured.py), else text quoting the
    tool results that end the conversation, else a greeting."""
    messages = [message for message in _list(request.get("messages")) if isinstance(message, dict)]
    prompt_tokens = sum(count_words(message_text(message)) for message in messages)
    said = last_user_text(messages)
    function = chosen_function(request, messages)
    if function is not None:
        reply = _call_reply(function, said, key, prompt_tokens)
        return _as_model(request.get("model"), reply, function, key)
    answering = bool(messages) and messages[-1].get("role") == "tool"
    prose = _results_text(messages) if answering else _greeting(said)
    structured = structured_text(request, said=said, prose=prose)
    if structured is not None:
        return _json_reply(structured, prompt_tokens)
    return _text_reply(prose, _output_limit(request), prompt_tokens)


def _call_reply(function: dict[str, Any], said: str, key: str, prompt_tokens: int) -> DemoReply:
    parameters = function.get("parameters")
    arguments = sample(parameters, hint=said or None) if isinstance(parameters, dict) else {}
    if not isinstance(arguments, dict):
        arguments = {}  # a non-object `parameters` schema: arguments must still be an object
    # json, not orjson: a schema's bounds may ask for integers beyond 64 bits.
    arguments_json = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    call = tool_call(call_id(key, 0), function["name"], arguments_json)
    usage = make_usage(prompt_tokens, max(1, len(re.findall(r"[^\W_]+", arguments_json))))
    return DemoReply((), call, "tool_calls", usage)


def _as_model(model: Any, reply: DemoReply, function: dict[str, Any], key: str) -> DemoReply:
    """The call as the upstream model id makes it (behaviours.py): structured for `demo`,
    written as text for `demo-text`, sometimes broken or text for `demo-sloppy`."""
    call = reply.call
    assert call is not None
    turn = "text" if model == TEXT_MODEL else sloppy_turn(key) if model == SLOPPY_MODEL else ""
    if turn == "text":
        text = as_text(call, "hermes" if model == TEXT_MODEL else "json")
        return DemoReply(tuple(split_fragments(text)), None, "stop", reply.usage)
    if turn == "broken":
        arguments = broken_arguments(
            json.loads(call["function"]["arguments"]), function.get("parameters")
        )
        broken = tool_call(
            call["id"],
            call["function"]["name"],
            json.dumps(arguments, ensure_ascii=False, separators=(",", ":")),
        )
        return dataclasses.replace(reply, call=broken)
    return reply


def _json_reply(text: str, prompt_tokens: int) -> DemoReply:
    """Structured output, streamed in uneven fragments like a call's arguments and never cut
    by `max_tokens`: cut JSON would not parse, which no demo should teach a client to expect."""
    usage = make_usage(prompt_tokens, max(1, len(re.findall(r"[^\W_]+", text))))
    return DemoReply(tuple(split_fragments(text)), None, "stop", usage)


def _text_reply(text: str, limit: int | None, prompt_tokens: int) -> DemoReply:
    pieces = tuple(_WORD_PIECE.findall(text))
    finish_reason: FinishReason = "stop"
    if limit is not None and len(pieces) > limit:
        pieces, finish_reason = pieces[:limit], "length"
    return DemoReply(pieces, None, finish_reason, make_usage(prompt_tokens, len(pieces)))


def _greeting(said: str) -> str:
    words = said.split()
    echo = " ".join(words[:ECHO_WORDS]) + ("..." if len(words) > ECHO_WORDS else "")
    heard = f'You said: "{echo}". ' if echo else ""
    return (
        f"Hello from the ToolRelay demo model! {heard}I run inside the proxy, with no API key "
        "and no network. Offer me tools and I will call one with arguments that fit its schema."
    )


def _results_text(messages: list[dict[str, Any]]) -> str:
    """One sentence per tool result at the end of the conversation, naming the tool that the
    assistant's call with that id asked for."""
    names: dict[str, str] = {}
    for message in messages:
        for call in _list(message.get("tool_calls")) if message.get("role") == "assistant" else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                names[call["id"]] = str(function.get("name") or "")
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    return " ".join(
        f"The {names.get(str(result.get('tool_call_id')), '') or 'requested'} tool returned: "
        f"{_clip(message_text(result))}."
        for result in results
    )


def _clip(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS].rstrip() + "..."


def message_text(message: dict[str, Any]) -> str:
    """A message's text: a string content, or its text parts joined by spaces."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [part.get("text") for part in _list(content) if isinstance(part, dict)]
    return " ".join(part for part in parts if isinstance(part, str))


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The last user message's text, whitespace collapsed; "" when there is none."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return " ".join(message_text(message).split())
    return ""


def count_words(text: str) -> int:
    return len(text.split())


def call_id(key: str, index: int) -> str:
    """`call_` + 24 base-62 characters from the request key, like OpenAI's ids."""
    number = int.from_bytes(hashlib.sha256(f"{key}:call:{index}".encode()).digest(), "big")
    characters = []
    for _ in range(24):
        number, digit = divmod(number, len(_BASE62))
        characters.append(_BASE62[digit])
    return "call_" + "".join(characters)


def split_fragments(text: str) -> list[str]:
    """`text` in pieces of FRAGMENT_SIZES widths, and at least three when it is that long."""
    if len(text) < 3:
        return [text]
    cap = len(text) // 3
    fragments: list[str] = []
    position = 0
    while position < len(text):
        width = min(FRAGMENT_SIZES[len(fragments) % len(FRAGMENT_SIZES)], cap)
        fragments.append(text[position : position + width])
        position += width
    return fragments


def completion(builder: ChunkBuilder, reply: DemoReply) -> dict[str, Any]:
    """The non-stream answer; usage always, as OpenAI sends it."""
    return dict(
        make_completion(
            builder,
            content="".join(reply.pieces),
            tool_calls=[reply.call] if reply.call else [],
            finish_reason=reply.finish_reason,
            usage=reply.usage,
        )
    )


def stream_frames(builder: ChunkBuilder, reply: DemoReply, *, include_usage: bool) -> list[bytes]:
    """The SSE frames of the streamed answer: role, word-sized content, the call's start and
    argument fragments, the finish chunk, the usage chunk if asked for, then [DONE]."""
    chunks: list[Chunk] = [builder.role()]
    chunks += [builder.content(piece) for piece in reply.pieces]
    if reply.call is not None:
        function = reply.call["function"]
        chunks.append(builder.tool_call_start(0, reply.call["id"], function["name"]))
        fragments = split_fragments(function["arguments"])
        chunks += [builder.tool_call_arguments(0, fragment) for fragment in fragments]
    chunks.append(builder.finish(reply.finish_reason))
    if include_usage:
        chunks.append(builder.usage(reply.usage))
    return [data_frame(orjson.dumps(chunk)) for chunk in chunks] + [DONE_FRAME]


def _output_limit(request: dict[str, Any]) -> int | None:
    """The cap on generated words: `max_completion_tokens` wins over `max_tokens`."""
    for field in ("max_completion_tokens", "max_tokens"):
        limit = request.get(field)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
            return limit
    return None


def _include_usage(request: dict[str, Any]) -> bool:
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
