"""Anthropic Messages API (`POST {base_url}/v1/messages`): OpenAI chat requests translated to
it, and its answers, SSE events and errors translated back (PROTOCOLS §B)."""

from app.translators.anthropic.passthrough import passthrough
from app.translators.anthropic.request import build_request
from app.translators.anthropic.response import parse_error, parse_response
from app.translators.anthropic.stream import AnthropicStream
from app.translators.base import Translator

TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_response,
    parse_error=parse_error,
    stream=AnthropicStream,
    native=passthrough,
    replays_thinking=True,
)
