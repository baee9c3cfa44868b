"""The input token estimate for count_tokens on upstreams with no counting endpoint."""

from __future__ import annotations

import math
from typing import Any

from app.faces.messages.count import (
    CHARS_PER_TOKEN,
    MEDIA_TOKENS,
    MESSAGE_TOKENS,
    estimate_tokens,
)


def body(content: Any = "hi", **fields: Any) -> dict[str, Any]:
    return {"model": "claude", "messages": [{"role": "user", "content": content}], **fields}


def image(data: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": data}
    return {"type": "image", "source": source}


def test_tiny_body_exact_value() -> None:
    # "role" + "user" + "content" + "hi" = 17 characters; one message; model is not counted.
    characters = len("role") + len("user") + len("content") + len("hi")
    assert characters == 17
    expected = math.ceil(characters / CHARS_PER_TOKEN) + MESSAGE_TOKENS
    assert expected == 9
    assert estimate_tokens(body()) == expected


def test_empty_body_is_zero() -> None:
    assert estimate_tokens({}) == 0


def test_each_message_adds_its_overhead() -> None:
    # {"role": "user", "content": ""} is 4 + 4 + 7 = 15 characters.
    one = body("")
    two = {**one, "messages": one["messages"] * 2}
    assert estimate_tokens(one) == math.ceil(15 / CHARS_PER_TOKEN) + MESSAGE_TOKENS
    assert estimate_tokens(two) == math.ceil(30 / CHARS_PER_TOKEN) + 2 * MESSAGE_TOKENS


def test_grows_with_text() -> None:
    short = estimate_tokens(body("a" * 40))
    long = estimate_tokens(body("a" * 400))
    assert long - short == 360 // CHARS_PER_TOKEN


def test_counts_system() -> None:
    assert estimate_tokens(body(system="s" * 400)) - estimate_tokens(body()) == 100


def test_counts_system_blocks() -> None:
    system = [{"type": "text", "text": "s" * 400}]
    assert estimate_tokens(body(system=system)) > estimate_tokens(body()) + 100


def test_counts_tools_with_schema_keys() -> None:
    tool = {
        "name": "read",
        "description": "d" * 400,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    assert estimate_tokens(body(tools=[tool])) > estimate_tokens(body()) + 100


def test_ignores_base64_image_data() -> None:
    assert estimate_tokens(body([image("A" * 10)])) == estimate_tokens(body([image("A" * 100000)]))


def test_adds_a_flat_cost_per_image() -> None:
    # The message is 15 characters; each image block adds "type" "image" "source" = 15 more
    # (its base64 source counts for nothing).
    one = estimate_tokens(body([image("A")]))
    two = estimate_tokens(body([image("A"), image("A")]))
    assert one == math.ceil(30 / CHARS_PER_TOKEN) + MEDIA_TOKENS + MESSAGE_TOKENS
    assert two == math.ceil(45 / CHARS_PER_TOKEN) + 2 * MEDIA_TOKENS + MESSAGE_TOKENS


def test_url_image_source_is_not_counted_as_text() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://x.test/" + "a" * 400}}
    assert estimate_tokens(body([url])) == estimate_tokens(body([image("A")]))


def test_counts_images_inside_tool_results() -> None:
    result = {"type": "tool_result", "tool_use_id": "t", "content": [image("A" * 1000)]}
    empty = {"type": "tool_result", "tool_use_id": "t", "content": []}
    assert estimate_tokens(body([result])) - estimate_tokens(body([empty])) >= MEDIA_TOKENS
