"""The upstream kinds, by the name config.yaml uses for them."""

from app.translators import anthropic, azure, demo, gemini, openai, vertex
from app.translators.base import Translator
from app.translators.bedrock.translator import TRANSLATOR as BEDROCK

TRANSLATORS: dict[str, Translator] = {
    "openai": openai.TRANSLATOR,
    "anthropic": anthropic.TRANSLATOR,
    "gemini": gemini.TRANSLATOR,
    "bedrock": BEDROCK,
    "azure": azure.TRANSLATOR,
    "vertex": vertex.TRANSLATOR,
    "demo": demo.TRANSLATOR,
}
