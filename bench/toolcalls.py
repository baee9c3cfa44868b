"""What tool-call quality costs the proxy, in-process and side by side in one run: a stream's
chunks through the kind's translator alone, and wrapped in the tool-call audit (recover off;
recover auto), and one call's validation with a warm validator cache.

Run: python -m bench.toolcalls"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from app.config import ToolCallsConfig
from app.openai_types import parse_chat_request
from app.sse import SSEEvent
from app.toolcalls.plan import plan_for
from app.toolcalls.stream import AuditedStream
from app.toolcalls.validation import Validators
from app.translators.base import ResponseContext, StreamTranslator
from app.translators.chunks import ChunkBuilder
from app.translators.openai.stream import OpenAIStream
from bench.validators import SCHEMAS, VALID

BUILD = ChunkBuilder("chatcmpl-bench", 1700000000, "m")
WORDS = "The weather in Paris is mild today, with light wind and a chance of rain later on. " * 4


def request(recover: str) -> tuple[ResponseContext, Any]:
    tools = [
        {"type": "function", "function": {"name": n, "parameters": s}} for n, s in SCHEMAS.items()
    ]
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": tools,
    }
    chat_request = parse_chat_request(orjson.dumps(body))
    ctx = ResponseContext("chatcmpl-bench", 1700000000, "m", chat_request)
    return ctx, plan_for(chat_request, ToolCallsConfig(recover=recover))  # type: ignore[arg-type]


def text_events() -> list[SSEEvent]:
    """A plain-text answer in word-sized deltas, as a model streams prose."""
    pieces = [word + " " for word in WORDS.split()]
    chunks = [BUILD.role(), *(BUILD.content(piece) for piece in pieces), BUILD.finish("stop")]
    return [SSEEvent(orjson.dumps(chunk).decode()) for chunk in chunks]


def call_events() -> list[SSEEvent]:
    """One tool call in 50 argument fragments."""
    arguments = orjson.dumps(VALID["sql"]).decode()
    size = max(1, len(arguments) // 50)
    fragments = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    chunks = [BUILD.role(), BUILD.tool_call_start(0, "call_1", "sql")]
    chunks += [BUILD.tool_call_arguments(0, fragment) for fragment in fragments]
    chunks.append(BUILD.finish("tool_calls"))
    return [SSEEvent(orjson.dumps(chunk).decode()) for chunk in chunks]


def per_event_us(
    make: Callable[[], StreamTranslator], events: list[SSEEvent], rounds: int
) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(rounds):
            stream = make()
            for event in events:
                stream.feed(event)
            stream.finish()
        best = min(best, time.perf_counter() - started)
    return best / rounds / len(events) * 1e6


def say(*lines: str) -> None:
    """Results go to stdout as Markdown rows."""
    sys.stdout.write("\n".join(lines) + "\n")


def main() -> None:
    validators = Validators()
    rows = []
    for label, events in (("plain text", text_events()), ("one tool call", call_events())):
        ctx, _ = request("off")
        alone = per_event_us(lambda ctx=ctx: OpenAIStream(ctx), events, 300)
        for recover in ("off", "auto"):
            ctx, plan = request(recover)
            wrapped = per_event_us(
                lambda ctx=ctx, plan=plan: AuditedStream(OpenAIStream(ctx), plan, validators),
                events,
                300,
            )
            rows.append((label, len(events), recover, alone, wrapped))
    say(
        "| stream | events | recover | translator alone µs/event | with the audit µs/event "
        "| added µs/event |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    )
    for label, count, recover, alone, wrapped in rows:
        figures = f"{alone:.2f} | {wrapped:.2f} | {wrapped - alone:+.2f}"
        say(f"| {label} | {count} | {recover} | {figures} |")
    tools = dict(SCHEMAS)
    say("")
    say("| tool call | validation µs (warm cache, JSON parse included) |")
    say("| --- | ---: |")
    for name in SCHEMAS:
        arguments = orjson.dumps(VALID[name]).decode()
        validators.classify(name, arguments, tools)
        best = min(
            timeit_us(lambda n=name, a=arguments: validators.classify(n, a, tools))
            for _ in range(5)
        )
        say(f"| {name} | {best:.2f} |")


def timeit_us(statement: Callable[[], Any], number: int = 5000) -> float:
    started = time.perf_counter()
    for _ in range(number):
        statement()
    return (time.perf_counter() - started) / number * 1e6


if __name__ == "__main__":
    main()
