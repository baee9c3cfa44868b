"""The worst case's input count (CONTRACT.md, "Spend": "its input counted generously from the
request"): the messages' and tools' JSON over CHARS_PER_TOKEN plus MESSAGE_TOKENS a message,
and an inline `data:` URL counted as MEDIA_TOKENS, not as its base64."""

from __future__ import annotations

import json
import math
from typing import Any

from app.openai_types import ChatRequest, parse_chat_request
from app.spend.guard import (
    CHARS_PER_TOKEN,
    MEDIA_TOKENS,
    MESSAGE_TOKENS,
    _measure,
    estimate_input,
)

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city, in Celsius — é",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Wetter in Zürich? «bitte»"},
]


def request(**body: Any) -> ChatRequest:
    return parse_chat_request(json.dumps({"model": "m", **body}).encode())


def compact_utf8(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_the_json_length_of_messages_and_tools() -> None:
    chars = compact_utf8(MESSAGES) + compact_utf8([TOOL])
    expected = math.ceil(chars / CHARS_PER_TOKEN) + 2 * MESSAGE_TOKENS
    assert estimate_input(request(messages=MESSAGES, tools=[TOOL])) == expected
    assert estimate_input(request(messages=MESSAGES)) == (
        math.ceil(compact_utf8(MESSAGES) / CHARS_PER_TOKEN) + 2 * MESSAGE_TOKENS
    )


def test_never_fewer_than_the_walk_of_every_string_and_key() -> None:
    """The walk the JSON length replaced (still used for media) counted keys and strings."""
    walked = _measure(MESSAGES)[0] + _measure([TOOL])[0]
    found = estimate_input(request(messages=MESSAGES, tools=[TOOL]))
    assert found >= math.ceil(walked / CHARS_PER_TOKEN) + 2 * MESSAGE_TOKENS


def test_an_inline_data_url_is_one_media_item_not_its_base64() -> None:
    url = "data:image/png;base64," + "A" * 30_000
    parts = [{"type": "text", "text": "what?"}, {"type": "image_url", "image_url": {"url": url}}]
    messages = [{"role": "user", "content": parts}]
    # Keys and strings but the URL: role user content type text text what? type image_url
    # image_url url.
    characters = len("roleusercontenttypetexttextwhat?typeimage_urlimage_urlurl")
    expected = math.ceil(characters / CHARS_PER_TOKEN) + MEDIA_TOKENS + MESSAGE_TOKENS
    assert estimate_input(request(messages=messages)) == expected


def test_data_in_text_is_not_media() -> None:
    messages = [{"role": "user", "content": "metadata: data: x"}]
    expected = math.ceil(compact_utf8(messages) / CHARS_PER_TOKEN) + MESSAGE_TOKENS
    assert estimate_input(request(messages=messages)) == expected


def test_without_wire_the_validated_request_is_counted() -> None:
    built = ChatRequest.model_validate({"model": "m", "messages": MESSAGES})
    assert not built.wire
    dumped = [m.model_dump(exclude_none=True) for m in built.messages]
    expected = math.ceil(compact_utf8(dumped) / CHARS_PER_TOKEN) + 2 * MESSAGE_TOKENS
    assert estimate_input(built) == expected
