"""The Responses API face in dispatch (app/routing/face.py's Face): a provider configured with
`responses: native` gets the client's request as it came; every other one gets the translated
chat request, with `max_output_tokens` lowered to the model's cap, and its answer and chunks
turned into the Responses API's object and events.

The face keeps the last answer it produced whole (with every reasoning item's
`encrypted_content`), so the caller can store it; `save` is awaited with it before a
stream's `response.completed` goes out, so a client that chains the next request the moment
it reads that event finds the response stored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.errors import ProxyError
from app.faces.output_cap import capped
from app.faces.responses.framing import NativeEncoder, ResponsesEncoder
from app.faces.responses.output import (
    ItemIds,
    finished_response,
    output_items,
    presented,
    response_id,
    response_shell,
)
from app.faces.responses.request import Translation
from app.faces.responses.stream import ResponsesStreamWriter
from app.openai_types import ChatRequest
from app.sse import StreamEncoder
from app.translators.base import NativeRequest, ResponseContext, Target, Translator
from app.translators.prompt_cache import check_input_breakpoints, explicit

INCLUDE_ENCRYPTED = "reasoning.encrypted_content"
VERBOSITY_KINDS = frozenset({"openai", "azure"})
"""Kinds whose Chat Completions take `verbosity` (the openai kinds relay the wire as built)."""


class ResponsesFace:
    __slots__ = ("_refusal", "_writer", "answer", "request", "save", "translation")

    def __init__(
        self,
        request: NativeRequest,
        translation: Translation | None,
        save: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self.request = request
        self.translation = translation
        self.save = save
        """Keeps a finished answer (stored responses); None when the client asked for none."""
        self._refusal: ProxyError | None = None
        self._writer: ResponsesStreamWriter | None = None
        self.answer: dict[str, Any] | None = None
        """The last translated answer, whole, as stored."""

    def refuse_translation(self, refusal: ProxyError) -> None:
        """The request could not be translated: only a native provider can serve it; any
        other raises `refusal`."""
        self._refusal = refusal

    @property
    def show_encrypted(self) -> bool:
        include = self.request.body.get("include")
        return isinstance(include, list) and INCLUDE_ENCRYPTED in include

    def native(self, translator: Translator, target: Target) -> Translator | None:
        if target.provider.responses != "native" or translator.responses_native is None:
            return None
        return translator.responses_native(self.request)

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        if self._refusal is not None:
            raise self._refusal
        if explicit(target):
            check_input_breakpoints(self.request.body.get("input"))
        chat_request = capped(chat_request, target)
        verbosity = self.translation.verbosity if self.translation is not None else None
        if verbosity is None or target.provider.kind not in VERBOSITY_KINDS:
            return chat_request
        with_verbosity = chat_request.model_copy()
        with_verbosity._wire = {**chat_request.wire, "verbosity": verbosity}
        return with_verbosity

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        if native:
            return NativeEncoder()
        assert self.translation is not None
        resp_id = response_id(ctx.completion_id)
        shell = response_shell(
            self.request.body, resp_id=resp_id, created=ctx.created, model=ctx.model
        )
        ids = ItemIds(resp_id.removeprefix("resp_"))
        self._writer = ResponsesStreamWriter(
            shell, ids, self.translation.tools, show_encrypted=self.show_encrypted
        )
        return ResponsesEncoder(self._writer)

    def stream_done(self) -> Callable[[], Awaitable[None]] | None:
        return self._stream_done

    async def _stream_done(self) -> None:
        assert self._writer is not None
        self._writer.settle()  # the live item is closed only at the end: stored with the rest
        self.answer = self._writer.final_response()
        if self.save is not None:
            await self.save(self.answer)

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        assert self.translation is not None
        resp_id = response_id(ctx.completion_id)
        shell = response_shell(
            self.request.body, resp_id=resp_id, created=ctx.created, model=ctx.model
        )
        items = output_items(
            completion, ItemIds(resp_id.removeprefix("resp_")), self.translation.tools
        )
        finish_reason = completion["choices"][0].get("finish_reason")
        self.answer = finished_response(shell, items, finish_reason, completion.get("usage"))
        return presented(self.answer, show_encrypted=self.show_encrypted)
