"""OpenAI Chat Completions (`POST {base_url}/chat/completions`) and every OpenAI-compatible
server: the request is forwarded as the client sent it, answers are relayed as they came, with
the known deviations of compatible servers (PROTOCOLS.md §D) repaired."""

from app.translators.base import Translator
from app.translators.openai.embeddings import embeddings_passthrough
from app.translators.openai.request import build_request
from app.translators.openai.response import parse_error, parse_response
from app.translators.openai.responses_passthrough import responses_passthrough
from app.translators.openai.stream import OpenAIStream

TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_response,
    parse_error=parse_error,
    stream=OpenAIStream,
    responses_native=responses_passthrough,
    embeddings=embeddings_passthrough,
)
