"""Restoring thinking blocks into a replayed history, and capturing them from answers, stream
and non-stream."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from app.openai_types import AssistantMessage, ChatRequest, parse_chat_request
from app.reasoning.replay import ThinkingCapture, restore_thinking, save_thinking, wants_thinking
from app.reasoning.store import MemoryThinkingStore
from app.sse import SSEEvent
from app.translators.base import Chunk
from app.translators.chunks import ChunkBuilder

BLOCK = {"type": "thinking", "thinking": "Call it.", "signature": "c2ln"}
CALL = {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def request(*, effort: str | None = "high", blocks: Any = None) -> ChatRequest:
    assistant: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    if blocks is not None:
        assistant["thinking_blocks"] = blocks
    wire: dict[str, Any] = {
        "model": "claude",
        "messages": [
            {"role": "user", "content": "hi"},
            assistant,
            {"role": "tool", "tool_call_id": "toolu_1", "content": "ok"},
        ],
    }
    if effort is not None:
        wire["reasoning_effort"] = effort
    return parse_chat_request(orjson.dumps(wire))


def assistant(chat_request: ChatRequest) -> AssistantMessage:
    message = chat_request.messages[1]
    assert isinstance(message, AssistantMessage)
    return message


def test_thinking_is_wanted_for_every_effort_but_none() -> None:
    assert wants_thinking(request(effort="minimal"))
    assert not wants_thinking(request(effort="none"))
    assert not wants_thinking(request(effort=None))


def test_stored_blocks_are_restored_onto_the_message_that_made_the_calls() -> None:
    store = MemoryThinkingStore()
    asyncio.run(store.save(["toolu_1"], [BLOCK]))
    original = request()
    restored = asyncio.run(restore_thinking(store, original))
    assert assistant(restored).thinking_blocks == [BLOCK]
    assert assistant(original).thinking_blocks is None  # the client's request is not changed
    assert restored.wire is original.wire
    assert restored.model_extra == {"reasoning_effort": "high"}


def test_blocks_the_client_kept_win_and_nothing_stored_changes_nothing() -> None:
    store = MemoryThinkingStore()
    asyncio.run(store.save(["toolu_1"], [{**BLOCK, "thinking": "stale"}]))
    kept = request(blocks=[BLOCK])
    assert asyncio.run(restore_thinking(store, kept)) is kept
    empty = request()
    assert asyncio.run(restore_thinking(MemoryThinkingStore(), empty)) is empty


def test_a_non_stream_answer_with_calls_and_blocks_is_saved() -> None:
    store = MemoryThinkingStore()
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [CALL],
        "thinking_blocks": [BLOCK],
    }
    asyncio.run(save_thinking(store, {"choices": [{"message": message}]}))
    assert asyncio.run(store.load(["toolu_1"])) == [BLOCK]
    asyncio.run(save_thinking(store, {"choices": []}))  # nothing to save, no error


class Scripted:
    """A stream translator that answers each feed with the next list of chunks."""

    def __init__(self, *batches: list[Chunk]) -> None:
        self.batches = list(batches)

    def feed(self, event: SSEEvent) -> list[Chunk]:
        return self.batches.pop(0)

    def usage(self) -> None:
        return None

    def finish(self) -> list[Chunk]:
        return []


def test_a_stream_is_captured_unchanged_and_saved_without_the_delta_index() -> None:
    builder = ChunkBuilder("c", 1, "claude")
    batches = [
        [builder.role(), builder.reasoning("Call it.")],
        [builder.thinking_block(0, BLOCK)],
        [builder.tool_call_start(0, "toolu_1", "f"), builder.tool_call_arguments(0, "{}")],
        [builder.finish("tool_calls")],
    ]
    store = MemoryThinkingStore()
    capture = ThinkingCapture(Scripted(*[list(batch) for batch in batches]), store)
    out = [capture.feed(SSEEvent("{}")) for _ in batches]
    assert out == batches
    asyncio.run(capture.save())
    assert asyncio.run(store.load(["toolu_1"])) == [BLOCK]


def test_a_stream_without_calls_saves_nothing() -> None:
    builder = ChunkBuilder("c", 1, "claude")
    store = MemoryThinkingStore()
    capture = ThinkingCapture(Scripted([builder.thinking_block(0, BLOCK)]), store)
    capture.feed(SSEEvent("{}"))
    asyncio.run(capture.save())
    assert store._blobs.keys() == []
