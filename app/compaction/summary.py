"""The summary a compaction asks the model for: the conversation as the client sent it, then
ToolRelay's instructions (app/compaction/instructions.py), as ONE chat request through routing's
dispatch, so the key's model list and limits, admission, budgets, spend, retries, fallbacks and
the request log apply to it as to any other turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.compaction.instructions import INSTRUCTIONS
from app.errors import ProxyError, UpstreamProtocolError
from app.faces.output_cap import capped
from app.faces.responses.request import translate
from app.openai_types import ChatRequest, chat_request_from_wire
from app.request_record import RequestRecord
from app.routing.dispatch import answer
from app.sse import StreamEncoder
from app.state import ProxyState
from app.translators.base import ResponseContext, Target, Translator

SUMMARY_FIELDS = ("model", "instructions", "tools", "parallel_tool_calls", "reasoning")
"""What of the client's request the summary keeps: the same system prompt and tools (so the
request shares the conversation's cached prefix) and reasoning effort; not its output format,
output cap, sampling or stream (the summary is plain text, taken whole)."""


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    usage: dict[str, Any] | None
    """The summary call's chat usage (priced answers carry `cost`)."""
    model_name: str
    headers: dict[str, str]


def summary_request(body: dict[str, Any], history: list[Any], given: list[Any]) -> ChatRequest:
    """`given`: the conversation to summarise as the client sent it (its trigger taken off);
    `history`: the stored conversation before it. Tools stay declared but not callable."""
    wanted = {name: body[name] for name in SUMMARY_FIELDS if body.get(name) is not None}
    asked = {"type": "message", "role": "user", "content": INSTRUCTIONS}
    if wanted.get("tools"):
        wanted["tool_choice"] = "none"
    translation = translate({**wanted, "input": [*given, asked]}, history)
    return chat_request_from_wire(translation.wire)


async def summarise(proxy: ProxyState, record: RequestRecord, chat_request: ChatRequest) -> Summary:
    result = await answer(proxy, chat_request, record, SUMMARY_FACE)
    completion = result.completion
    raw = getattr(completion, "raw", None)
    whole: dict[str, Any] = orjson.loads(raw) if isinstance(raw, bytes) else completion or {}
    message = (whole.get("choices") or [{}])[0].get("message") or {}
    text = message.get("content")
    if not isinstance(text, str) or not text.strip():
        # An empty summary would replace the conversation with nothing: the agent would carry
        # on having forgotten its task. A 502 lets Codex report the compaction as failed.
        raise UpstreamProtocolError(
            f"The model '{result.model_name}' answered the compaction with no summary text."
        )
    return Summary(
        text,
        whole.get("usage"),
        result.model_name,
        dict(result.headers),
    )


class SummaryFace:
    """The Face (app/routing/face.py) the summary is dispatched with: always translated (a
    chat answer is what is read back), never streamed, capped like any Responses request."""

    __slots__ = ()

    def native(self, translator: Translator, target: Target) -> Translator | None:
        return None

    def stream_done(self) -> None:
        return None

    def prepare(self, chat_request: ChatRequest, target: Target) -> ChatRequest:
        return capped(chat_request, target)

    def encoder(self, ctx: ResponseContext, *, native: bool) -> StreamEncoder:
        raise ProxyError("the compaction summary is never streamed")  # pragma: no cover

    def completion(self, completion: dict[str, Any], ctx: ResponseContext) -> dict[str, Any]:
        return completion


SUMMARY_FACE = SummaryFace()
