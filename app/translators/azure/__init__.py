"""Azure OpenAI (CONTRACT.md, "Cloud kinds"): the openai kind's translation, addressed the Azure
way. With `api_version`, the deployments API (`{base_url}/openai/deployments/{deployment}/
chat/completions?api-version=V`, the deployment in the path); without, the v1 API
(`{base_url}/openai/v1/chat/completions`, the deployment as `model`). The key goes in
`api-key`. Azure's stream additions (a first chunk of `prompt_filter_results` with no choices,
choices with only `content_filter_results`, `object: ""` annotations) are dropped by the openai
kind's stream (PROTOCOLS.md §D #23), and for this kind (the target's) it also removes
`content_filter_results` beside a delta (issue 30: strict clients see OpenAI's stream). Azure
sends them beside every delta, so its fast-path check removes them too and marks the chunk
edited: the pass-through encodes it (then the next like it from a byte template) instead of
relaying Azure's bytes, at about the openai kind's cost. A content-filter refusal is its 400
with code `content_filter`, relayed as any upstream 4xx."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

from app.openai_types import ChatRequest
from app.translators.base import NativeRequest, Target, Translator, UpstreamRequest
from app.translators.openai import TRANSLATOR as OPENAI
from app.translators.openai.embeddings import embeddings_passthrough

CHAT_PATH = "chat/completions"
EMBEDDINGS_PATH = "embeddings"


def azure_url(target: Target, path: str) -> str:
    provider = target.provider
    if provider.api_version is None:
        return f"{provider.base_url}/openai/v1/{path}"
    deployment = quote(target.upstream_model, safe="")
    version = quote(provider.api_version, safe="")
    return f"{provider.base_url}/openai/deployments/{deployment}/{path}?api-version={version}"


def addressed(upstream: UpstreamRequest, target: Target, path: str) -> UpstreamRequest:
    """An openai-kind request sent to Azure: its URL, and the key as `api-key` instead of the
    Bearer header the openai kind put there (a configured header, e.g. an Entra ID token,
    stays)."""
    headers = dict(upstream.headers)
    key = target.provider.api_key
    if key:
        del headers["authorization"]
        headers["api-key"] = key
    return dataclasses.replace(upstream, url=azure_url(target, path), headers=headers)


def build_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    return addressed(OPENAI.build_request(request, target), target, CHAT_PATH)


def embeddings(native: NativeRequest) -> Translator:
    """The openai kind's embeddings, sent to the deployment's `/embeddings`."""
    relayed = embeddings_passthrough(native)

    def build_embeddings_request(request: ChatRequest, target: Target) -> UpstreamRequest:
        return addressed(relayed.build_request(request, target), target, EMBEDDINGS_PATH)

    return dataclasses.replace(relayed, build_request=build_embeddings_request)


TRANSLATOR = dataclasses.replace(
    OPENAI, build_request=build_request, embeddings=embeddings, responses_native=None
)
