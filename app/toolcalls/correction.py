"""The request sent again under `on_invalid: retry`: the same history, plus one user message
saying exactly which call was wrong and how, so the model can correct it."""

from __future__ import annotations

import orjson

from app.openai_types import ChatRequest, parse_chat_request

CORRECTION = (
    "Your last answer called a tool incorrectly: {problems} "
    "Call the tool again with arguments that match its definition."
)


def with_correction(request: ChatRequest, problems: str) -> ChatRequest:
    """A user message, not a tool result: the bad call may name no offered tool or carry
    arguments that are not JSON, which no upstream accepts back in a history."""
    note = {"role": "user", "content": CORRECTION.format(problems=problems)}
    wire = {**request.wire, "messages": [*request.wire["messages"], note]}
    return parse_chat_request(orjson.dumps(wire))
