"""Google Gemini API, generativelanguage v1beta (`POST {base_url}/v1beta/models/{model}:
generateContent`, `:streamGenerateContent?alt=sse` when streaming): OpenAI chat requests
translated to it, and its answers, SSE frames and errors translated back (PROTOCOLS §C)."""

from app.translators.base import Translator
from app.translators.gemini.embeddings import batch_embeddings
from app.translators.gemini.errors import parse_error
from app.translators.gemini.request import build_request
from app.translators.gemini.response import parse_response
from app.translators.gemini.stream import GeminiStream

TRANSLATOR = Translator(
    build_request=build_request,
    parse_response=parse_response,
    parse_error=parse_error,
    stream=GeminiStream,
    embeddings=batch_embeddings,
)
