"""The Messages API face in dispatch (app/routing/face.py's Face): a kind that speaks it gets
the client's request as it came; every other kind gets the translated chat request, with
`max_tokens` lowered to the model's `max_output_tokens`, and its answer and chunks turned
into Anthropic's message and events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.errors import ProxyError
from app.faces.messages.framing import NATIVE_ENCODER, MessagesEncoder
from app.faces.messages.response import anthropic_message, message_id
from app.faces.messages.stream import MessagesStreamWriter
from app.faces.messages.thread import MessageFold
from app.faces.output_cap import capped
from app.openai_types import ChatRequest, ClaudeAsked, chat_request_from_wire
from app.sse import StreamEncoder
from app.translators.base import NativeRequest, ResponseContext, Target, Translator
from app.translators.prompt_cache import client_breakpoints


def _unmarked(value: Any) -> Any:
    """The chat wire without `cache_control`: the Messages face keeps breakpoints only for
    bedrock (cachePoints); to the other translated kinds they are left out (CONTRACT.md,
    "Prompt caching"). A tool result that became one marked text part to carry its mark is
    a plain string again, as it is unmarked (servers that take only string tool content)."""
    if isinstance(value, dict):
        unmarked = {key: _unmarked(item) for key, item in value.items() if key != "cache_control"}
        content = unmarked.get("content")
        if unmarked.get("role") == "tool" and isinstance(content, list) and len(content) == 1:
            unmarked["content"] = content[0].get("text", content)
        return unmarked
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    return value


class MessagesFace:
    __slots__ = (
        "_encoder",
        "_fold",
        "_message_id",
        "_refusal",
        "_request",
        "save",
        "translated",
    )

    def __init__(
        self,
        request: NativeRequest,
        save: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self._request = request
        self._refusal: ProxyError | None = None
        self.save = save
        """Keeps a translated answer's message (a `thread`); None when nothing is kept."""
        self._fold: MessageFold | None = None
        self._encoder: MessagesEncoder | None = None
        self._message_id = ""
        self.translated = False
        """Whether the answer came through a translation (not an anthropic upstream's own)."""

    def refuse_translation(self, refusal: ProxyError) -> None:
        """The request could not be translated: only a kind that takes it natively can
        serve it; any other raises `refusal`."""
        self._refusal = refusal

    def native(self, translator: Translator, target: Target) -> Translator | None:
        self.translated = False
        return translator.native(self._request) if translator.native is not None else None

    def stream_done(self) -> Callable[[], Awaitable[None]] | None:
        return None if self.save is None else self._stream_done

    async def _stream_done(self) -> None:
        """Runs before the stream's end goes out: the end is written first, so the kept turn
        is the whole message the client is sent (every call with its input)."""
        assert self._encoder is not None
        assert self._fold is not None
        assert self.save is not None
        self._encoder.settle()
        await self.save({"id": self._message_id, "content": self._fold.content})

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        if self._refusal is not None:
            raise self._refusal
        self.translated = True
        if target.provider.kind != "bedrock" and client_breakpoints(chat_request):
            chat_request = chat_request_from_wire(_unmarked(chat_request.wire))
        chat_request = capped(chat_request, target)
        if target.provider.kind != "bedrock":
            return chat_request
        return with_claude_asked(chat_request, self._request)

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        if native:
            return NATIVE_ENCODER
        self._message_id = message_id(ctx.completion_id)
        writer = MessagesStreamWriter(self._message_id, ctx.model)
        self._fold = MessageFold() if self.save is not None else None
        self._encoder = MessagesEncoder(writer, self._fold)
        return self._encoder

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return anthropic_message(completion)


def with_claude_asked(chat_request: ChatRequest, native: NativeRequest) -> ChatRequest:
    """The request carrying what chat has no place for (betas, the exact thinking asked) to
    a kind that translates for Claude (bedrock), which sends them as Claude takes them."""
    header = native.headers.get("anthropic-beta") or ""
    betas = tuple(value.strip() for value in header.split(",") if value.strip())
    thinking = native.body.get("thinking")
    output_config = native.body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    asked = ClaudeAsked(
        betas,
        thinking if isinstance(thinking, dict) else None,
        effort if isinstance(effort, str) else None,
    )
    copy = chat_request.model_copy()
    copy._claude = asked
    return copy
