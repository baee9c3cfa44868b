"""The built-in `demo` kind: the openai translator, served by an in-process deterministic model
instead of a network upstream, so a newcomer gets a working proxy with no account."""

import dataclasses

from app.translators import openai
from app.translators.demo.embeddings import serve_embeddings
from app.translators.demo.model import serve
from app.translators.openai.embeddings import PATH as EMBEDDINGS_PATH


def serve_local(path: str, body: bytes) -> tuple[int, str, list[bytes]]:
    """Chat completions, or embeddings when that is the path asked for."""
    if path.endswith(EMBEDDINGS_PATH):
        return serve_embeddings(body)
    return serve(body)


TRANSLATOR = dataclasses.replace(openai.TRANSLATOR, local_upstream=serve_local)
