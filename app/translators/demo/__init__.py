"""The built-in `demo` kind: the openai translator, served by an in-process deterministic model
instead of a network upstream, so a newcomer gets a working proxy with no account."""

import dataclasses

from app.translators import openai
from app.translators.demo.model import serve

TRANSLATOR = dataclasses.replace(openai.TRANSLATOR, local_upstream=serve)
