"""Responses input parts' `cache_control` (CONTRACT.md, "Prompt caching"): kept on the chat
part they become (so the explicit kinds put their breakpoint on the same block), and more than 4
refused for an explicit kind, naming the input item."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.faces.responses.face import ResponsesFace
from app.faces.responses.request import translate
from app.openai_types import chat_request_from_wire
from app.translators.anthropic.request import build_request
from app.translators.base import NativeRequest, Target

ANTHROPIC = Target("m", "an", ProviderConfig(kind="anthropic", api_key="k"), "claude-sonnet-4-5")
OPENAI = Target("m", "oa", ProviderConfig(kind="openai", api_key="k"), "gpt-5")
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def text(value: str, **more: Any) -> dict[str, Any]:
    return {"type": "input_text", "text": value, **more}


def test_input_parts_keep_their_breakpoints_to_the_same_block() -> None:
    body = {
        "model": "m",
        "input": [
            {
                "role": "developer",
                "content": [text("Rules."), text("More.", cache_control=ONE_HOUR)],
            },
            {"role": "user", "content": [text("Hi.", cache_control={"type": "ephemeral"})]},
        ],
    }
    request = chat_request_from_wire(translate(body, []).wire)
    sent = orjson.loads(build_request(request, ANTHROPIC).body)
    assert sent["system"] == [
        {"type": "text", "text": "Rules."},
        {"type": "text", "text": "More.", "cache_control": ONE_HOUR},
    ]
    assert sent["messages"][0]["content"] == [
        {"type": "text", "text": "Hi.", "cache_control": {"type": "ephemeral"}}
    ]


def test_more_than_four_is_refused_naming_the_input_item_for_explicit_kinds_only() -> None:
    mark = {"type": "ephemeral"}
    items = [{"role": "user", "content": [text("a"), text("b", cache_control=mark)]}] * 5
    body = {"model": "m", "input": items}
    face = ResponsesFace(NativeRequest("/v1/responses", body, {}), None)
    request = chat_request_from_wire(translate(body, []).wire)
    with pytest.raises(InvalidRequest) as caught:
        face.prepare(request, ANTHROPIC)
    assert caught.value.param == "input[4].content[1].cache_control"
    assert face.prepare(request, OPENAI) is request
