"""The contract every upstream kind implements: pure request/response/stream translation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app.config import ProviderConfig
from app.errors import ProxyError, UpstreamProtocolError
from app.openai_types import ChatRequest
from app.sse import SSEEvent

Chunk = dict[str, Any]
"""One `chat.completion.chunk` (or a bare usage chunk), as a dict ready for orjson."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where one attempt goes: a provider and its model id, and the name the client sees."""

    model_name: str
    provider_name: str
    provider: ProviderConfig
    upstream_model: str
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """An HTTP request ready to send: the body is serialised exactly once, here."""

    url: str
    headers: dict[str, str]
    body: bytes
    stream: bool


@dataclass(frozen=True, slots=True)
class ResponseContext:
    """What response translation needs besides the upstream's bytes. The id and clock are
    injected so translators are deterministic and tests compare exact output."""

    completion_id: str
    created: int
    model: str
    request: ChatRequest

    @property
    def include_usage(self) -> bool:
        return self.request.include_usage


class StreamTranslator(Protocol):
    """A state machine fed upstream SSE events, yielding client chunks."""

    def feed(self, event: SSEEvent) -> list[Chunk]:
        """Chunks for one upstream event (often none). Raises UpstreamStreamError when the
        upstream reports an error in-band."""
        ...

    def finish(self) -> list[Chunk]:
        """Chunks owed at the end of the upstream stream (e.g. the usage chunk). Raises
        UpstreamProtocolError if the upstream stream was cut short."""
        ...


def load_json_object(payload: bytes | str, what: str) -> dict[str, Any]:
    """An upstream body or event, which every kind expects to be a JSON object; anything else
    is the upstream breaking its protocol (502), never a crash in a translator."""
    try:
        loaded = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(f"The upstream sent {what} that is not valid JSON.") from None
    if not isinstance(loaded, dict):
        raise UpstreamProtocolError(f"The upstream sent {what} that is not a JSON object.")
    return loaded


LocalUpstream = Callable[[bytes], tuple[int, str, list[bytes]]]
"""A built-in upstream with no network: request body -> (status, content type, body parts)."""


@dataclass(frozen=True, slots=True)
class Translator:
    build_request: Callable[[ChatRequest, Target], UpstreamRequest]
    parse_response: Callable[[bytes, ResponseContext], dict[str, Any]]
    parse_error: Callable[[int, bytes, Mapping[str, str]], ProxyError]
    stream: Callable[[ResponseContext], StreamTranslator]
    local_upstream: LocalUpstream | None = None
