"""Thinking blocks between answers and the turns that replay them: saved from each answer
that called tools (non-stream, or a stream as it passes), restored into assistant messages
that come back without them. Only for kinds whose thinking must be replayed (Anthropic's) and
requests that ask for thinking: every other request pays nothing."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.errors import log_exception
from app.openai_types import AssistantMessage, ChatRequest
from app.reasoning.store import Blocks, ThinkingStore
from app.sse import SSEEvent
from app.translators.base import Chunk, StreamTranslator

logger = logging.getLogger("toolrelay.reasoning")


def wants_thinking(request: ChatRequest) -> bool:
    return (request.model_extra or {}).get("reasoning_effort") not in (None, "none")


class ThinkingKeeper:
    """One attempt's part in keeping thinking: restore before the request is translated,
    save once the answer is whole. A store that fails to save costs the next turn its
    thinking (the translator turns it off there, and says so), never this answer."""

    __slots__ = ("_capture", "_redact", "_store")

    def __init__(self, store: ThinkingStore, redact: Callable[[str], str]) -> None:
        self._store = store
        self._redact = redact
        self._capture: ThinkingCapture | None = None

    async def restore(self, request: ChatRequest) -> ChatRequest:
        return await restore_thinking(self._store, request)

    def capture(self, stream: StreamTranslator) -> StreamTranslator:
        self._capture = ThinkingCapture(stream, self._store)
        return self._capture

    async def save_stream(self) -> None:
        if self._capture is not None:
            await self._keep(self._capture.save())

    async def save_completion(self, completion: dict[str, Any]) -> None:
        await self._keep(save_thinking(self._store, completion))

    async def _keep(self, saving: Awaitable[None]) -> None:
        try:
            await saving
        except Exception:
            log_exception(logger, self._redact, "could not keep the answer's thinking blocks")


async def restore_thinking(store: ThinkingStore, request: ChatRequest) -> ChatRequest:
    """The request with stored blocks put back on each assistant message that made tool
    calls and came back without `thinking_blocks`; the same request when there is nothing to
    restore. Messages whose blocks are gone stay as they are: the translator then decides
    (Anthropic's: thinking off for the request, with a warning)."""
    restored: dict[int, Blocks] = {}
    for position, message in enumerate(request.messages):
        if (
            isinstance(message, AssistantMessage)
            and message.tool_calls
            and not message.thinking_blocks
        ):
            blocks = await store.load([call.id for call in message.tool_calls])
            if blocks:
                restored[position] = blocks
    if not restored:
        return request
    messages = list(request.messages)
    for position, blocks in restored.items():
        messages[position] = messages[position].model_copy(update={"thinking_blocks": blocks})
    return request.model_copy(update={"messages": messages})


async def save_thinking(store: ThinkingStore, completion: dict[str, Any]) -> None:
    """Keep a non-stream answer's thinking blocks when it called tools."""
    choices = completion.get("choices") or ()
    message = choices[0].get("message") if choices else None
    if not isinstance(message, dict):
        return
    blocks, calls = message.get("thinking_blocks"), message.get("tool_calls")
    if blocks and calls:
        await store.save([call["id"] for call in calls], blocks)


class ThinkingCapture:
    """A stream translator's chunks passed on untouched, watched for the thinking blocks and
    tool-call ids of the answer, which `save` keeps once the stream has ended (before its
    [DONE], so the client cannot send the next turn first)."""

    __slots__ = ("_blocks", "_call_ids", "_inner", "_store")

    def __init__(self, inner: StreamTranslator, store: ThinkingStore) -> None:
        self._inner = inner
        self._store = store
        self._blocks: Blocks = []
        self._call_ids: list[str] = []

    def feed(self, event: SSEEvent) -> list[Chunk]:
        return self._watch(self._inner.feed(event))

    def finish(self) -> list[Chunk]:
        return self._watch(self._inner.finish())

    def usage(self) -> dict[str, Any] | None:
        return self._inner.usage()

    async def save(self) -> None:
        if self._blocks and self._call_ids:
            await self._store.save(self._call_ids, self._blocks)

    def _watch(self, chunks: list[Chunk]) -> list[Chunk]:
        for chunk in chunks:
            choices = chunk.get("choices")
            if not choices:
                continue
            delta = choices[0]["delta"]
            for block in delta.get("thinking_blocks", ()):
                self._blocks.append({key: value for key, value in block.items() if key != "index"})
            for call in delta.get("tool_calls", ()):
                if "id" in call:
                    self._call_ids.append(call["id"])
        return chunks
