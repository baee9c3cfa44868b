"""Gemini answers -> OpenAI: a GenerateContentResponse to a ChatCompletion, and what the stream
shares with it: reading a candidate's parts, finish reasons, usage (PROTOCOLS C.4, C.8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import orjson

from app.errors import ProxyError, UpstreamProtocolError, UpstreamStreamError
from app.openai_types import FinishReason, Usage
from app.translators.base import ResponseContext, load_json_object
from app.translators.chunks import ChunkBuilder, make_completion, make_usage, tool_call
from app.translators.gemini.ids import call_id, response_nonce

# Gemini `finishReason` -> OpenAI `finish_reason` (C.8). Anything else (OTHER,
# UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, FINISH_REASON_UNSPECIFIED, a value newer than this
# table) is "stop". MALFORMED_FUNCTION_CALL is not here: it is an error (malformed_call_error).
FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "LANGUAGE": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}
MALFORMED_FUNCTION_CALL = "MALFORMED_FUNCTION_CALL"
DROPPED_CALLS_HEADER = "x-toolrelay-dropped-tool-calls"

Piece = tuple[Literal["content", "reasoning"], str]
"""A run of answer text or of thought-summary text, in the order Gemini sent them."""


def finish_reason(gemini_reason: Any, has_calls: bool) -> FinishReason:
    """Calls were made -> `tool_calls`, whatever Gemini says: it says STOP after calls (F.5),
    and since its calls arrive whole they are complete even when the turn then hit its
    token limit or a filter, so the client must still run them."""
    if has_calls:
        return "tool_calls"
    return FINISH_REASONS.get(gemini_reason, "stop") if isinstance(gemini_reason, str) else "stop"


def malformed_call_error(candidate: Mapping[str, Any], started: bool) -> ProxyError | None:
    """MALFORMED_FUNCTION_CALL: the model wrote a call Gemini could not parse, and the turn
    holds nothing of it. We answer 502 (in-band once a stream has begun) rather than "stop"
    with empty content (LiteLLM's choice): an agent loop reads an empty "stop" as the model
    being done, while an error says what happened, and OpenAI SDKs retry 502 on their own,
    which often gets a well-formed call. Transcripts: malformed_function_call(_stream)."""
    if candidate.get("finishReason") != MALFORMED_FUNCTION_CALL:
        return None
    detail = candidate.get("finishMessage")
    message = "the gemini model produced a function call Gemini could not parse"
    if isinstance(detail, str) and detail:
        message = f"{message}: {detail}"
    if started:
        return UpstreamStreamError(message, code="malformed_function_call")
    return UpstreamProtocolError(message, code="malformed_function_call")


def openai_usage(usage_metadata: Any) -> Usage:
    """Gemini's `candidatesTokenCount` leaves out `thoughtsTokenCount`, which OpenAI counts
    in `completion_tokens`; tool-use prompt tokens count as prompt so the total adds up
    (C.8). Counts left out (Gemini omits zeros) are 0."""
    counts = usage_metadata if isinstance(usage_metadata, dict) else {}
    thoughts = _count(counts, "thoughtsTokenCount")
    return make_usage(
        _count(counts, "promptTokenCount") + _count(counts, "toolUsePromptTokenCount"),
        _count(counts, "candidatesTokenCount") + thoughts,
        cached_tokens=_count(counts, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _count(counts: Mapping[str, Any], key: str) -> int:
    value = counts.get(key)
    return value if isinstance(value, int) else 0


def first_candidate(gemini_body: Mapping[str, Any]) -> dict[str, Any] | None:
    """Candidate 0 (requests never ask for more); None when the prompt was blocked."""
    candidates = gemini_body.get("candidates")
    for candidate in candidates if isinstance(candidates, list) else ():
        if isinstance(candidate, dict) and candidate.get("index", 0) == 0:
            return candidate
    return None


def prompt_blocked(gemini_body: Mapping[str, Any]) -> bool:
    """`promptFeedback.blockReason` with no candidates: Gemini refused the prompt itself.
    Answered as an empty message with `content_filter` (C.4), as OpenAI does for a filtered
    prompt, rather than as an error: the request was valid. Transcript: prompt_blocked."""
    feedback = gemini_body.get("promptFeedback")
    return isinstance(feedback, dict) and bool(feedback.get("blockReason"))


@dataclass(slots=True)
class GeminiCall:
    name: str
    arguments: str
    signature: str | None


class CandidateParts:
    """Reads a candidate's parts, all at once or frame by frame: text and thoughts as they
    come; calls kept until the turn ends, because a call's thought signature can arrive
    after it, on a trailing part with empty text (C.5), and must still reach its id.

    Signatures on text parts are dropped: an OpenAI message has nowhere to keep them, and
    Gemini validates only the ones on function calls (text ones only help its reasoning).
    """

    __slots__ = ("_trailing_signature", "calls")

    def __init__(self) -> None:
        self.calls: list[GeminiCall] = []
        self._trailing_signature: str | None = None

    def read(self, candidate: Mapping[str, Any]) -> list[Piece]:
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        pieces: list[Piece] = []
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            signature = part.get("thoughtSignature")
            signature = signature if isinstance(signature, str) and signature else None
            function_call = part.get("functionCall")
            text = part.get("text")
            if isinstance(function_call, dict):
                self.calls.append(_call(function_call, signature))
            elif isinstance(text, str) and text:
                pieces.append(("reasoning" if part.get("thought") is True else "content", text))
            elif signature and self.calls:
                self._trailing_signature = signature
        return pieces

    def finished_calls(self, ctx: ResponseContext) -> list[GeminiCall]:
        """The turn's calls; a trailing signature goes to the first call when no call came
        with one (only the first of parallel calls is signed).

        Gemini has no switch for `parallel_tool_calls: false` (C.2), so it is honoured here:
        the first call is kept (the signed one, which Gemini wants back), the others are cut
        and counted in `x-toolrelay-dropped-tool-calls`."""
        signed = any(call.signature for call in self.calls)
        if self.calls and not signed and self._trailing_signature:
            self.calls[0].signature = self._trailing_signature
        if ctx.request.parallel_tool_calls is False and len(self.calls) > 1:
            ctx.headers[DROPPED_CALLS_HEADER] = str(len(self.calls) - 1)
            del self.calls[1:]
        return self.calls


def _call(function_call: Mapping[str, Any], signature: str | None) -> GeminiCall:
    name = function_call.get("name")
    if not isinstance(name, str) or not name:
        raise UpstreamProtocolError("the gemini upstream sent a functionCall without a name")
    args = function_call.get("args")
    return GeminiCall(name, orjson.dumps({} if args is None else args).decode(), signature)


def parse_response(body: bytes, ctx: ResponseContext) -> dict[str, Any]:
    """A GenerateContentResponse -> a ChatCompletion, its call ids synthesised (ids.py)."""
    gemini_body = load_json_object(body, "an answer")
    candidate = first_candidate(gemini_body)
    if candidate is None and not prompt_blocked(gemini_body):
        raise UpstreamProtocolError("the gemini upstream answered without a candidate")
    reader = CandidateParts()
    pieces = reader.read(candidate or {})
    error = malformed_call_error(candidate or {}, started=False)
    if error is not None:
        raise error
    calls = reader.finished_calls(ctx)
    nonce = response_nonce(ctx.completion_id)
    completion = make_completion(
        ChunkBuilder(ctx.completion_id, ctx.created, ctx.model),
        content="".join(text for kind, text in pieces if kind == "content"),
        tool_calls=[
            tool_call(call_id(nonce, index, call.signature), call.name, call.arguments)
            for index, call in enumerate(calls)
        ],
        finish_reason=(
            finish_reason(candidate.get("finishReason"), bool(calls))
            if candidate is not None
            else "content_filter"
        ),
        usage=openai_usage(gemini_body.get("usageMetadata")),
        reasoning="".join(text for kind, text in pieces if kind == "reasoning"),
    )
    # A ChatCompletion TypedDict is a dict at run time; Translator's signature is the looser one.
    return cast(dict[str, Any], completion)
