"""What each client API's stream framing costs per chunk, in-process and side by side in one
run: the same chat stream (a text preamble, then two calls of 50 argument fragments each)
through the chat encoder, the Messages writer and the Responses writer, each with its
framing. The network, the upstream and the translator are the same for all three, so this is
the whole per-chunk difference between the faces.

Run: python -m bench.encoders"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from app.faces.messages.framing import MessagesEncoder
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.responses.framing import ResponsesEncoder
from app.faces.responses.output import ItemIds, response_shell
from app.faces.responses.stream import ResponsesStreamWriter
from app.faces.responses.tools import ToolNames, ToolOrigin
from app.sse import OPENAI_ENCODER, StreamEncoder
from app.translators.chunks import ChunkBuilder

BUILD = ChunkBuilder("chatcmpl-bench", 1700000000, "m")
FRAGMENTS = 50
ROUNDS = 300


def chat_stream() -> list[dict[str, Any]]:
    chunks = [BUILD.chunk({"role": "assistant", "content": "Let me check."})]
    for index in range(2):
        call = {"index": index, "id": f"call_{index}", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": '{"city": "'}
        chunks.append(BUILD.chunk({"tool_calls": [call]}))
        for _ in range(FRAGMENTS):
            fragment = {"index": index, "function": {"arguments": "Par"}}
            chunks.append(BUILD.chunk({"tool_calls": [fragment]}))
        closing = {"index": index, "function": {"arguments": '"}'}}
        chunks.append(BUILD.chunk({"tool_calls": [closing]}))
    chunks.append(BUILD.chunk({}, finish_reason="tool_calls"))
    return chunks


def messages_encoder() -> StreamEncoder:
    return MessagesEncoder(MessagesStreamWriter("msg_bench", "m"))


def responses_encoder() -> StreamEncoder:
    names = ToolNames()
    names.origins["get_weather"] = ToolOrigin("function", "get_weather")
    body = {"model": "m", "input": "hi", "tools": [{"type": "function", "name": "get_weather"}]}
    shell = response_shell(body, resp_id="resp_bench", created=1700000000, model="m")
    writer = ResponsesStreamWriter(shell, ItemIds("bench"), names, show_encrypted=False)
    return ResponsesEncoder(writer)


def per_chunk(make: Callable[[], StreamEncoder], chunks: list[dict[str, Any]]) -> float:
    """Best of five: microseconds per chunk, one encode call per chunk, as the relay makes."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(ROUNDS):
            encoder = make()
            for chunk in chunks:
                encoder.encode([chunk])
            encoder.end()
        best = min(best, (time.perf_counter() - started) / ROUNDS / len(chunks) * 1e6)
    return best


def main() -> None:
    chunks = chat_stream()
    chat = per_chunk(lambda: OPENAI_ENCODER, chunks)
    for name, make in (
        ("chat", lambda: OPENAI_ENCODER),
        ("messages", messages_encoder),
        ("responses", responses_encoder),
    ):
        cost = chat if name == "chat" else per_chunk(make, chunks)
        print(f"{name:10} {cost:5.2f} us/chunk  (+{cost - chat:4.2f} over chat)")  # noqa: T201


if __name__ == "__main__":
    main()
