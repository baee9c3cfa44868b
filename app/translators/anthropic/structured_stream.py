"""The answers of `structured_output: tool` attempts (structured.py): the answer tool's call
becomes content, whole or streamed, so the client sees what `output_config.format` gives.

Both wrap the plain translation (response.py, stream.py) rather than change it: attempts that
did not offer the tool are translated exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.sse import SSEEvent
from app.translators.anthropic.response import parse_response
from app.translators.anthropic.stream import AnthropicStream
from app.translators.anthropic.structured import answer_tool, content_from_tool
from app.translators.base import Chunk, ResponseContext, StreamTranslator
from app.translators.chunks import ChunkBuilder

ParseResponse = Callable[[bytes, ResponseContext], dict[str, Any]]
StreamFactory = Callable[[ResponseContext], StreamTranslator]


def answer_parser(parse_response: ParseResponse) -> ParseResponse:
    """A kind's parse_response, with the answer tool's input moved to `content` (the bedrock
    kind wraps its Converse parsing the same way)."""

    def parse_answer(body: bytes, ctx: ResponseContext) -> dict[str, Any]:
        completion = parse_response(body, ctx)
        name = answer_tool(ctx)
        if name is not None:
            content_from_tool(completion, name)
        return completion

    return parse_answer


def answer_streams(stream: StreamFactory) -> StreamFactory:
    """A kind's stream translator, wrapped when the attempt offered an answer tool (the
    wrapper reads one call delta per chunk, as AnthropicStream and BedrockStream make them)."""

    def answer_stream(ctx: ResponseContext) -> StreamTranslator:
        name = answer_tool(ctx)
        if name is None:
            return stream(ctx)
        builder = ChunkBuilder(ctx.completion_id, ctx.created, ctx.model)
        return AnswerToolStream(stream(ctx), name, builder)

    return answer_stream


parse_answer = answer_parser(parse_response)
answer_stream = answer_streams(AnthropicStream)


class AnswerToolStream:
    """Rewrites AnthropicStream's chunks: the answer tool's start is dropped and its argument
    fragments (Anthropic's `input_json_delta`s) become content deltas; later tool indexes
    close the gap; `tool_calls` as the finish becomes `stop` if no other call was made.

    Text is held until the end: if the answer tool is called, the text around it is dropped
    (the non-stream answer's content is the tool's input alone); otherwise it is sent before
    the finish chunk. A forced tool comes without text, so this only delays the rare text of
    a model that was offered the tool (thinking on, or the client's own tools).
    """

    __slots__ = ("_answer_index", "_builder", "_held", "_inner", "_name", "_other_calls")

    def __init__(self, inner: StreamTranslator, name: str, builder: ChunkBuilder) -> None:
        self._inner = inner
        self._name = name
        self._builder = builder
        self._answer_index: int | None = None
        self._held: list[Chunk] = []
        self._other_calls = 0

    def feed(self, event: SSEEvent) -> list[Chunk]:
        return self._rewrite(self._inner.feed(event))

    def finish(self) -> list[Chunk]:
        return self._rewrite(self._inner.finish())

    def usage(self) -> dict[str, Any] | None:
        return self._inner.usage()

    def _rewrite(self, chunks: list[Chunk]) -> list[Chunk]:
        rewritten: list[Chunk] = []
        for chunk in chunks:
            choices = chunk.get("choices")
            if not choices:  # the usage chunk
                rewritten.append(chunk)
                continue
            rewritten += self._rewrite_choice(chunk, choices[0])
        return rewritten

    def _rewrite_choice(self, chunk: Chunk, choice: dict[str, Any]) -> list[Chunk]:
        delta = choice["delta"]
        if choice.get("finish_reason") is not None:
            return self._finish(chunk, choice)
        if "tool_calls" in delta:
            return self._tool_call(chunk, delta["tool_calls"][0])
        if delta.get("content") and "role" not in delta:
            if self._answer_index is None:
                self._held.append(chunk)
            return []
        return [chunk]

    def _tool_call(self, chunk: Chunk, call: dict[str, Any]) -> list[Chunk]:
        """AnthropicStream sends one call delta per chunk: a start (with `id`) or arguments."""
        index = call["index"]
        if "id" in call and call["function"]["name"] == self._name and self._answer_index is None:
            self._answer_index = index
            self._held.clear()
            return []
        if index == self._answer_index:
            fragment = call["function"].get("arguments")
            return [self._builder.content(fragment)] if fragment else []
        if "id" in call:
            self._other_calls += 1
        if self._answer_index is not None and index > self._answer_index:
            call["index"] = index - 1
        return [chunk]

    def _finish(self, chunk: Chunk, choice: dict[str, Any]) -> list[Chunk]:
        held, self._held = self._held, []
        if (
            self._answer_index is not None
            and self._other_calls == 0
            and choice["finish_reason"] == "tool_calls"
        ):
            choice["finish_reason"] = "stop"
        return [*held, chunk]
