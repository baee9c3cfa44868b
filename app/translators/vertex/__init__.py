"""Google Vertex AI (CONTRACT.md, "Cloud kinds"; PROTOCOLS.md H.2): Gemini models through the
gemini kind's translation, Claude models (ids `claude-*`) through the anthropic kind's, each
addressed the Vertex way:

- Gemini: `{base_url}/v1/projects/{project}/locations/{region}/publishers/google/models/
  {model}:generateContent` (`:streamGenerateContent?alt=sse`), the body AI Studio's;
- Claude: `.../publishers/anthropic/models/{model}:rawPredict` (`:streamRawPredict`), the
  Messages body without `model` and with `anthropic_version: "vertex-2023-10-16"`; the answer
  and events Anthropic's; a Messages client's request relayed the same way.

No key goes in a header here: the provider's OAuth2 token is added just before sending
(app/credentials/google.py). Errors come in Google's shape from Vertex's front end (auth,
quota, an unknown model) and in Anthropic's from Claude itself: each is read as its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

from app.errors import ProxyError
from app.openai_types import ChatRequest
from app.translators.anthropic import TRANSLATOR as ANTHROPIC
from app.translators.anthropic.passthrough import passthrough
from app.translators.anthropic.request import messages_body
from app.translators.base import (
    NativeRequest,
    Target,
    Translator,
    UpstreamRequest,
    provider_headers,
)
from app.translators.gemini import TRANSLATOR as GEMINI
from app.translators.gemini.errors import parse_error as google_error
from app.translators.prompt_cache import without_billing_block
from app.translators.vertex.betas import VERTEX_BETAS, header_betas, split_betas

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
BETA_HEADER = "anthropic-beta"


def is_claude(target: Target) -> bool:
    return target.upstream_model.startswith("claude")


def model_segment(target: Target) -> str:
    """The model id as one path segment; `@` (Claude's version, `claude-sonnet-4-5@20250929`)
    stays as Vertex's own clients send it."""
    return quote(target.upstream_model, safe="@")


def models_url(target: Target, publisher: str) -> str:
    provider = target.provider
    return (
        f"{provider.base_url}/v1/projects/{quote(provider.project or '', safe='')}"
        f"/locations/{quote(provider.region or '', safe='')}/publishers/{publisher}/models"
    )


def _headers(target: Target, more: Mapping[str, str] | None = None) -> dict[str, str]:
    return provider_headers({"content-type": "application/json", **(more or {})}, target.provider)


def gemini_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    """The gemini kind's request, sent to Vertex: its method (`generateContent` or the stream
    one) on the Vertex model's URL, without AI Studio's key header."""
    built = GEMINI.build_request(request, target)
    method = built.url.rsplit(":", 1)[1]
    url = f"{models_url(target, 'google')}/{model_segment(target)}:{method}"
    return dataclasses.replace(built, url=url, headers=_headers(target))


def claude_request(request: ChatRequest, target: Target) -> UpstreamRequest:
    upstream_body, warning = messages_body(request, target)
    return _claude(upstream_body, target, warning)


def _claude(
    upstream_body: dict[str, Any],
    target: Target,
    warning: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> UpstreamRequest:
    """A Messages body as Vertex takes it: the model in the URL, not the body."""
    body = {name: value for name, value in upstream_body.items() if name != "model"}
    body["anthropic_version"] = VERTEX_ANTHROPIC_VERSION
    stream = body.get("stream") is True
    method = "streamRawPredict" if stream else "rawPredict"
    return UpstreamRequest(
        url=f"{models_url(target, 'anthropic')}/{model_segment(target)}:{method}",
        headers=_headers(target, headers),
        body=orjson.dumps(body),
        stream=stream,
        warning=warning,
    )


def claude_passthrough(native: NativeRequest) -> Translator:
    """A Messages client's request relayed to Claude on Vertex as it came (only `model` moved
    to the URL, Claude Code's billing line left out: prompt_cache.py); `count_tokens` goes to
    Vertex's own counting model, `model` kept."""
    relayed = passthrough(native)
    asked = header_betas(native.headers.get(BETA_HEADER))

    def build_request(chat_request: ChatRequest, target: Target) -> UpstreamRequest:
        betas, warning = split_betas(asked, target.provider, VERTEX_BETAS)
        forwarded = {BETA_HEADER: ",".join(betas)} if betas else {}
        if native.path.split("?")[0] == COUNT_TOKENS_PATH:
            body = {**native.body, "model": target.upstream_model}
            url = f"{models_url(target, 'anthropic')}/count-tokens:rawPredict"
            headers = _headers(target, forwarded)
            return UpstreamRequest(url, headers, orjson.dumps(body), False, warning=warning)
        return _claude(without_billing_block(native.body), target, warning, headers=forwarded)

    return dataclasses.replace(relayed, build_request=build_request, parse_error=claude_error)


def claude_error(status: int, upstream_body: bytes, headers: Mapping[str, str]) -> ProxyError:
    """Anthropic's error when Claude answered, Google's when Vertex's front end did."""
    try:
        answered = orjson.loads(upstream_body)
    except orjson.JSONDecodeError:
        answered = None
    if isinstance(answered, dict) and answered.get("type") == "error":
        return ANTHROPIC.parse_error(status, upstream_body, headers)
    return google_error(status, upstream_body, headers)


VERTEX_GEMINI = dataclasses.replace(GEMINI, build_request=gemini_request, embeddings=None)
VERTEX_CLAUDE = dataclasses.replace(
    ANTHROPIC, build_request=claude_request, parse_error=claude_error, native=claude_passthrough
)


def for_target(target: Target) -> Translator:
    return VERTEX_CLAUDE if is_claude(target) else VERTEX_GEMINI


TRANSLATOR = dataclasses.replace(VERTEX_GEMINI, for_target=for_target)
"""The kind's entry: every use goes through `for_target` (translator_for)."""
