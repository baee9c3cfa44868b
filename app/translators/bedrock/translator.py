"""The bedrock kind's Translator: Converse requests, answers, streams and errors. With the
model's `structured_output: tool` the answer tool's call becomes content, through the anthropic
kind's wrappers (the same rule, the same shapes of chunks)."""

from __future__ import annotations

from typing import Any

from app.translators.anthropic.structured import answer_tool, content_from_tool
from app.translators.anthropic.structured_stream import AnswerToolStream
from app.translators.base import ResponseContext, StreamTranslator, Translator
from app.translators.bedrock.errors import parse_error
from app.translators.bedrock.eventstream import EventStreamDecoder
from app.translators.bedrock.request import build_request
from app.translators.bedrock.response import parse_response
from app.translators.bedrock.stream import BedrockStream
from app.translators.chunks import ChunkBuilder


def parse_answer(body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """parse_response, with the answer tool's input moved to `content`."""
    completion = parse_response(body, ctx)
    name = answer_tool(ctx)
    if name is not None:
        content_from_tool(completion, name)
    return completion


def answer_stream(ctx: ResponseContext) -> StreamTranslator:
    """BedrockStream, wrapped when the attempt offered an answer tool (one call delta per
    chunk, as BedrockStream makes them, is what AnswerToolStream reads)."""
    name = answer_tool(ctx)
    if name is None:
        return BedrockStream(ctx)
    builder = ChunkBuilder(ctx.completion_id, ctx.created, ctx.model)
    return AnswerToolStream(BedrockStream(ctx), name, builder)


TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_answer,
    parse_error=parse_error,
    stream=answer_stream,
    replays_thinking=True,
    framing=EventStreamDecoder,
)
