"""Anthropic Messages API (`POST {base_url}/v1/messages`): OpenAI chat requests translated to
it, and its answers, SSE events and errors translated back (PROTOCOLS §B)."""

from app.translators.anthropic.passthrough import passthrough
from app.translators.anthropic.request import build_request
from app.translators.anthropic.response import parse_error
from app.translators.anthropic.structured_stream import answer_stream, parse_answer
from app.translators.base import Translator

TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_answer,
    parse_error=parse_error,
    stream=answer_stream,
    native=passthrough,
    replays_thinking=True,
)
