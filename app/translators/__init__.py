"""The upstream kinds, by the name config.yaml uses for them."""

from app.translators import anthropic, azure, demo, gemini, openai, vertex
from app.translators.base import Translator

TRANSLATORS: dict[str, Translator] = {
    "openai": openai.TRANSLATOR,
    "anthropic": anthropic.TRANSLATOR,
    "gemini": gemini.TRANSLATOR,
    "azure": azure.TRANSLATOR,
    "vertex": vertex.TRANSLATOR,
    "demo": demo.TRANSLATOR,
}
