"""The contract every upstream kind implements: pure request/response/stream translation."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app.config import PromptCache, ProviderConfig, ReasoningConfig, StructuredOutput
from app.errors import InvalidRequest, ProxyError, UpstreamProtocolError
from app.openai_types import ChatRequest
from app.sse import FrameDecoder, SSEDecoder, SSEEvent

Chunk = dict[str, Any]
"""One `chat.completion.chunk` (or a bare usage chunk), as a dict ready for orjson."""


DEFAULT_REASONING = ReasoningConfig()


@dataclass(frozen=True, slots=True)
class Target:
    """Where one attempt goes: a provider and its model id, and the name the client sees."""

    model_name: str
    provider_name: str
    provider: ProviderConfig
    upstream_model: str
    max_tokens: int | None = None
    reasoning: ReasoningConfig = DEFAULT_REASONING
    max_output_tokens: int | None = None
    structured_output: StructuredOutput = "native"
    prompt_cache: PromptCache = "auto"


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """An HTTP request ready to send: the body is serialised exactly once, here."""

    url: str
    headers: dict[str, str]
    body: bytes
    stream: bool
    warning: str | None = None
    """What translation could not honour as asked and did instead (thinking turned off for
    this request...): sent to the client as `x-toolrelay-warning`."""


@dataclass(frozen=True, slots=True)
class ResponseContext:
    """What response translation needs besides the upstream's bytes. The id and clock are
    injected so translators are deterministic and tests compare exact output."""

    completion_id: str
    created: int
    model: str
    request: ChatRequest
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    """Response headers translation decided on (`x-toolrelay-*`), sent with the answer: all of
    them on a non-stream answer; on a stream, those set before its first chunk."""
    target: Target | None = None
    """The attempt's target, for answers whose translation depends on the model's settings
    (an anthropic `structured_output: tool` answer turns the tool's input into content)."""

    @property
    def include_usage(self) -> bool:
        return self.request.include_usage


Repeat = Callable[[str], object]
"""What passing one more chunk records, given its varying string (a text delta or an argument
fragment), when that chunk equals the one just passed in all else and nothing was fed or
passed in between: the pass-through's byte templates skip decoding such chunks, and this
skips checking them again."""

EDITED: Any = object()
"""Set on a chunk a fast-path check edited (Azure's annotations removed): the relay encodes
it, not the upstream's bytes. No str, so never an upstream key (nor encodable if left)."""

PassCheck = Callable[[Chunk], Repeat | None]
"""Whether a decoded upstream chunk may go out as it came (its effect then recorded): None if
not, else what passing another chunk like it would record. The decision must not depend on
the chunk's text delta or argument fragment, only on their being strings."""


class StreamTranslator(Protocol):
    """A state machine fed upstream SSE events, yielding client chunks. One may also offer
    `fast_path() -> PassCheck | None`: which decoded chunks the relay may send as the upstream
    wrote them (app/relay/pass_through.py), their effect recorded."""

    def feed(self, event: SSEEvent) -> list[Chunk]:
        """Chunks for one upstream event (often none). Raises UpstreamStreamError when the
        upstream reports an error in-band."""
        ...

    def finish(self) -> list[Chunk]:
        """Chunks owed at the end of the upstream stream (e.g. the usage chunk). Raises
        UpstreamProtocolError if the upstream stream was cut short."""
        ...

    def usage(self) -> dict[str, Any] | None:
        """The token usage the upstream reported so far, in OpenAI's shape, whether or not the
        client asked for it (limits and metrics count it); None before any."""
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


ANY_VALUE = None
"""In an accepted-fields table: the field is accepted whatever its value."""

AcceptedFields = Mapping[str, tuple[Any, ...] | None]
"""Request fields ChatRequest does not declare, and what a translated kind makes of each: a
tuple lists the values accepted because they are OpenAI's default and so change nothing;
ANY_VALUE takes any value."""


def check_extra_fields(request: ChatRequest, accepted: AcceptedFields, kind: str) -> None:
    """Refuse by name a field the kind cannot honour: a dropped field would change the answer
    with nothing to tell the client why. A field not listed is refused; null means unset.
    `n` > 1 is refused too: no translated kind returns several choices."""
    if request.n is not None and request.n != 1:
        raise InvalidRequest(f"'n' > 1 is not supported by {kind} upstreams", param="n")
    for field, value in (request.model_extra or {}).items():
        if value is None:
            continue
        if field not in accepted:
            raise InvalidRequest(f"'{field}' is not supported by {kind} upstreams", param=field)
        values = accepted[field]
        if values is not ANY_VALUE and value not in values:
            default = " or ".join(orjson.dumps(choice).decode() for choice in values)
            only = f" (only its default, {default}, is accepted)" if default else ""
            raise InvalidRequest(
                f"'{field}' is not supported by {kind} upstreams{only}", param=field
            )


def provider_headers(own: dict[str, str], provider: ProviderConfig) -> dict[str, str]:
    """A kind's own headers (auth, version), then the provider's configured ones, which win
    whatever their case: a configured header is deliberate."""
    configured = {name.lower() for name in provider.headers}
    headers = {name: value for name, value in own.items() if name not in configured}
    headers.update(provider.headers)
    return headers


RETRY_HEADERS = ("retry-after", "retry-after-ms")


def retry_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """An upstream error's retry hints, kept so the router and the client's SDK wait as long
    as the upstream asked."""
    return {name.lower(): value for name, value in headers.items() if name.lower() in RETRY_HEADERS}


LocalUpstream = Callable[[str, bytes], tuple[int, str, list[bytes]]]
"""A built-in upstream with no network: (request path, body) -> (status, content type, body
parts)."""


@dataclass(frozen=True, slots=True)
class NativeRequest:
    """A client's request in an upstream kind's own API (the Messages API for anthropic), to
    be relayed as it came: the path with the client's query, the decoded body (only `model`
    is replaced), and the client's protocol headers worth keeping (version, betas)."""

    path: str
    body: dict[str, Any]
    headers: Mapping[str, str]


def relayed_request(
    native: NativeRequest, target: Target, headers: dict[str, str]
) -> UpstreamRequest:
    """A native request as the client sent it, only `model` replaced, with the kind's own
    `headers` (auth, version) and the provider's configured ones."""
    body = {**native.body, "model": target.upstream_model}
    return UpstreamRequest(
        url=f"{target.provider.base_url}{native.path}",
        headers=provider_headers(headers, target.provider),
        body=orjson.dumps(body),
        stream=body.get("stream") is True,
    )


class RelayedJSON(dict[str, Any]):
    """An answer the client gets as the upstream's own bytes, only a value or two patched in
    place (`raw`); the dict holds just what the proxy itself reads (usage). For large answers
    (embeddings run to 100 kB of floats) re-serialising would cost more than the whole rest
    of the request."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes, read: dict[str, Any]) -> None:
        super().__init__(read)
        self.raw = raw


def relayed_answer(upstream_body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """A native answer as it came (it must still be a JSON object)."""
    return load_json_object(upstream_body, "an answer")


@dataclass(frozen=True, slots=True)
class Translator:
    build_request: Callable[[ChatRequest, Target], UpstreamRequest]
    parse_response: Callable[[bytes, ResponseContext], dict[str, Any]]
    parse_error: Callable[[int, bytes, Mapping[str, str]], ProxyError]
    stream: Callable[[ResponseContext], StreamTranslator]
    local_upstream: LocalUpstream | None = None
    native: Callable[[NativeRequest], Translator] | None = None
    """For a client that speaks this kind's own API: a translator that relays its request and
    the answer untouched (anthropic: the Messages API face's passthrough)."""
    embeddings: Callable[[NativeRequest], Translator] | None = None
    """POST /v1/embeddings on this kind: a translator for that one request (the body is the
    client's); None when the kind has no embeddings (anthropic)."""
    responses_native: Callable[[NativeRequest], Translator] | None = None
    """For a Responses API client, when the provider is configured `responses: native`: a
    translator that relays its request and the answer untouched."""
    replays_thinking: bool = False
    """The upstream needs its thinking blocks back in later turns (Anthropic): answers'
    `thinking_blocks` are kept and restored by app/reasoning."""
    framing: Callable[[], FrameDecoder] = SSEDecoder
    """A new decoder of the kind's stream framing for each stream: SSE, unless the kind brings
    its own (Bedrock's binary event stream), so the relay stays one relay."""
    for_target: Callable[[Target], Translator] | None = None
    """A kind whose translation depends on the model (Vertex AI serves Gemini and Claude): the
    translator for one target, which then stands for the kind in everything (see
    `translator_for`)."""


def translator_for(translators: Mapping[str, Translator], target: Target) -> Translator:
    """The translator that serves `target`: its kind's, or the one its kind picks for it."""
    translator = translators[target.provider.kind]
    return translator if translator.for_target is None else translator.for_target(target)
