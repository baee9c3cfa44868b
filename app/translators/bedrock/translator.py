"""The bedrock kind's Translator: Converse requests, answers, streams and errors. With the
model's `structured_output: tool` the answer tool's call becomes content, through the anthropic
kind's wrappers (the same rule, the same shapes of chunks)."""

from __future__ import annotations

from app.translators.anthropic.structured_stream import answer_parser, answer_streams
from app.translators.base import Translator
from app.translators.bedrock.errors import parse_error
from app.translators.bedrock.eventstream import EventStreamDecoder
from app.translators.bedrock.request import build_request
from app.translators.bedrock.response import parse_response
from app.translators.bedrock.stream import BedrockStream

TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=answer_parser(parse_response),
    parse_error=parse_error,
    stream=answer_streams(BedrockStream),
    replays_thinking=True,
    framing=EventStreamDecoder,
)
