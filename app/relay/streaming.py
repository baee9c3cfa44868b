"""The relay: upstream bytes -> SSE decoder -> stream translator -> client bytes, committing to
a 200 only once the first client chunk exists."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from app.errors import (
    ProxyError,
    UpstreamStreamError,
    UpstreamTimeout,
    log_exception,
)
from app.relay.pass_through import PassThrough
from app.relay.upstream_types import ReadLimits, UpstreamAnswer, UpstreamClient
from app.sse import OPENAI_ENCODER, FrameDecoder, SSEDecoder, SSEEvent, StreamEncoder
from app.translators.base import (
    Chunk,
    PassCheck,
    ResponseContext,
    StreamTranslator,
    Translator,
    UpstreamRequest,
)

logger = logging.getLogger("toolrelay.relay")
NO_LIMITS = ReadLimits(None, None)


async def complete(
    client: UpstreamClient,
    upstream_request: UpstreamRequest,
    translator: Translator,
    ctx: ResponseContext,
    limits: ReadLimits,
) -> dict[str, Any]:
    """A non-stream call: the whole upstream answer, translated."""
    response = await client.open(upstream_request, limits)
    try:
        upstream_body = await response.read()
    finally:
        await response.close()
    if response.status_code >= 400:
        raise translator.parse_error(response.status_code, upstream_body, response.headers)
    return translator.parse_response(upstream_body, ctx)


async def open_stream(
    client: UpstreamClient,
    upstream_request: UpstreamRequest,
    translator: Translator,
    ctx: ResponseContext,
    options: StreamOptions,
    wrap: Callable[[StreamTranslator], StreamTranslator] | None = None,
) -> AsyncGenerator[bytes, None]:
    """Opens the upstream stream and reads until the first client chunk exists. `wrap`, when
    given, wraps the kind's stream translator (the tool-call audit does).

    Any failure up to then raises an ordinary ProxyError, so the client still gets a real
    status (and a router may retry). From then on the stream is committed, and a translator
    that asks (`committed()`, the tool-call audit's) is told so. The returned iterator owns
    the upstream response and closes it however the client side ends.
    """
    response = await client.open(upstream_request, options.limits)
    stream = translator.stream(ctx)
    wrapped = stream if wrap is None else wrap(stream)
    relay = _Relay(response, wrapped, translator.framing(), options, ctx.model)
    try:
        if response.status_code >= 400:
            upstream_body = await response.read()
            raise translator.parse_error(response.status_code, upstream_body, response.headers)
        first = await relay.first_frames()
    except BaseException:
        await response.close()
        raise
    relay.committed()
    return relay.frames(first)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """What a relay needs besides the request: the provider's name (for messages), the
    redactor (for error events and logs), the client's limits (its read limit is the idle
    limit between upstream reads), a deadline on the event loop's clock for the whole
    stream, and who to tell when the relay ends, however it ends."""

    provider_name: str
    redact: Callable[[str], str]
    limits: ReadLimits = NO_LIMITS
    deadline: float = math.inf
    on_end: Callable[[StreamOutcome], None] | None = None
    before_done: Callable[[], Awaitable[None]] | None = None
    """Awaited once the upstream stream has ended well, before [DONE] goes out."""
    encoder: StreamEncoder = OPENAI_ENCODER


@dataclass(slots=True)
class StreamOutcome:
    """How a relayed stream ended: completely (`error` None) or with this error event; the
    usage the upstream reported (OpenAI's shape), whether or not the client was sent it."""

    error: ProxyError | None = None
    usage: dict[str, Any] | None = None


class _Relay:
    """One upstream stream being relayed to one client."""

    __slots__ = (
        "_decoder",
        "_done",
        "_encoder",
        "_frames",
        "_options",
        "_outcome",
        "_provider_name",
        "_redact",
        "_response",
        "_translator",
    )

    def __init__(
        self,
        response: UpstreamAnswer,
        translator: StreamTranslator,
        decoder: FrameDecoder,
        options: StreamOptions,
        client_model: str,
    ) -> None:
        """`decoder`: the kind's stream framing (SSE but for kinds with their own); only an
        SSE stream can take the pass-through's fast path."""
        self._response = response
        self._redact = options.redact
        self._decoder = decoder
        self._translator = translator
        self._provider_name = options.provider_name
        self._options = options
        self._encoder = options.encoder
        self._outcome = StreamOutcome()
        self._done = False
        translated = _translating(self._decoder, translator, self._encoder)
        accept = _fast_path(translator, self._encoder)
        self._frames = (  # the client's bytes for one upstream read
            translated
            if accept is None or not isinstance(self._decoder, SSEDecoder)
            else PassThrough(accept, client_model, translated, self._decoder).frames
        )

    async def first_frames(self) -> bytes:
        read = self._response.read_some
        while upstream_bytes := await read():
            frames = self._frames(upstream_bytes)
            if frames:
                return frames
        return await self._end_frames()

    def committed(self) -> None:
        """The first frames are the client's: tells the translator, when it wants to know."""
        committed = getattr(self._translator, "committed", None)
        if committed is not None:
            committed()

    async def frames(self, first: bytes) -> AsyncGenerator[bytes, None]:
        deadline = self._options.deadline
        clock = asyncio.get_running_loop().time
        read = self._response.read_some
        try:
            yield first
            if self._done:
                return
            while upstream_bytes := await read():
                frames = self._frames(upstream_bytes)
                if frames:
                    yield frames
                if clock() > deadline:
                    raise UpstreamTimeout(
                        f"The upstream provider '{self._provider_name}' exceeded the total "
                        "time allowed for one answer."
                    )
            yield await self._end_frames()
        except ProxyError as exc:
            yield self._error_frame(exc)
        except Exception:
            log_exception(logger, self._redact, "relay failed after the stream began")
            yield self._error_frame(
                ProxyError("Internal error in the proxy.", code="internal_error")
            )
        finally:
            await self._response.close()
            self._outcome.usage = self._translator.usage()
            if self._options.on_end is not None:
                self._options.on_end(self._outcome)

    async def _end_frames(self) -> bytes:
        """Every chunk is encoded before `before_done` runs (a face's encoder then holds the
        whole answer), and the end marker after it."""
        tail = _encoded(self._translator, self._encoder, self._decoder.flush())
        tail += self._encoder.encode(self._translator.finish())
        if self._options.before_done is not None:
            await self._options.before_done()
        self._done = True
        return tail + self._encoder.end()

    def _error_frame(self, error: ProxyError) -> bytes:
        """After the first byte the status is sent; the failure becomes one error event and
        the stream ends (no [DONE], so no client mistakes it for a complete answer)."""
        self._outcome.error = error
        if not isinstance(error, UpstreamStreamError):
            logger.warning("stream failed after it began: %s", self._redact(error.message))
        return self._encoder.error(error, self._redact)


def _translating(
    decoder: FrameDecoder, translator: StreamTranslator, encoder: StreamEncoder
) -> Callable[[bytes], bytes]:
    """The client's bytes for one upstream read, decoded, translated and encoded. (A closure,
    not a method of the relay kept on the relay: that would be a cycle for the collector.)"""

    def translated(upstream_bytes: bytes) -> bytes:
        return _encoded(translator, encoder, decoder.feed(upstream_bytes))

    return translated


def _encoded(translator: StreamTranslator, encoder: StreamEncoder, events: list[SSEEvent]) -> bytes:
    chunks: list[Chunk] = []
    for event in events:
        chunks += translator.feed(event)
    return encoder.encode(chunks) if chunks else b""


def _fast_path(translator: StreamTranslator, encoder: StreamEncoder) -> PassCheck | None:
    """The pass-through's check, where the client reads chat chunks and the translator offers
    one."""
    if encoder is not OPENAI_ENCODER:
        return None
    fast_path = getattr(translator, "fast_path", None)
    return None if fast_path is None else fast_path()
