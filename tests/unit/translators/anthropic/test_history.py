"""OpenAI messages -> Anthropic turns: content Anthropic cannot take is refused naming the
part; history is merged, reordered and cleaned the way PROTOCOLS B.9 requires."""

from __future__ import annotations

from typing import Any

import pytest

from app.translators.anthropic.messages import anthropic_tool_id
from tests.helpers.anthropic_requests import (
    HELLO,
    PNG,
    TOOLS,
    assistant_calls,
    body,
    call,
    refusal,
)

# --- refused content --------------------------------------------------------------------------


def user_parts(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "s"}, {"role": "user", "content": list(parts)}]


TEXT = {"type": "text", "text": "look"}


@pytest.mark.parametrize(
    ("part", "words"),
    [
        ({"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}, "input_audio"),
        ({"type": "image_url", "image_url": {"url": "ftp://x/a.png"}}, "http(s)"),
        ({"type": "image_url", "image_url": {"url": "file:///tmp/a.png"}}, "http(s)"),
        ({"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}}, "base64"),
        ({"type": "image_url", "image_url": {"url": "data:image/tiff;base64,AAAA"}}, "image/tiff"),
        ({"type": "file", "file": {"file_id": "file-abc"}}, "file_data"),
        ({"type": "file", "file": {"file_data": "AAAA", "filename": "a.txt"}}, "PDF"),
        ({"type": "file", "file": {"file_data": "data:text/csv;base64,AAAA"}}, "text/csv"),
    ],
)
def test_content_anthropic_cannot_take_is_refused_naming_the_part(
    part: dict[str, Any], words: str
) -> None:
    error = refusal(messages=user_parts(TEXT, part))
    assert error.param == "messages[1].content[1]"
    assert words in error.message


def test_legacy_function_messages_are_refused() -> None:
    messages = [HELLO, {"role": "function", "name": "f", "content": "1"}]
    error = refusal(messages=messages)
    assert error.param == "messages[1]"
    assert "legacy function messages are not supported for anthropic upstreams" in error.message


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ('{"city": "Par', "not valid JSON"),
        ("{'city': 'Paris'}", "not valid JSON"),
        ("[1, 2]", "an array, not a JSON object"),
        ("null", "null, not a JSON object"),
        ('"Paris"', "a string, not a JSON object"),
        ("3", "a number, not a JSON object"),
        ("true", "a boolean, not a JSON object"),
    ],
)
def test_bad_tool_call_arguments_are_refused_naming_the_call(arguments: str, words: str) -> None:
    messages = [HELLO, assistant_calls(call("call_ok"), call("call_bad", arguments))]
    results = [{"role": "tool", "tool_call_id": i, "content": "1"} for i in ("call_ok", "call_bad")]
    error = refusal(messages=[*messages, *results], tools=TOOLS)
    assert error.param == "messages[1].tool_calls[1].function.arguments"
    assert "'call_bad'" in error.message
    assert "messages[1].tool_calls[1].function.arguments" in error.message
    assert words in error.message


@pytest.mark.parametrize(
    "messages",
    [[{"role": "system", "content": "s"}], [{"role": "user", "content": "  "}]],
)
def test_a_conversation_with_no_content_at_all_is_refused(messages: list[dict[str, Any]]) -> None:
    assert refusal(messages=messages).param == "messages"


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "developer", "content": "d"}, {"role": "assistant", "content": "Hi!"}, HELLO],
        [{"role": "user", "content": ""}, {"role": "assistant", "content": "Hi!"}, HELLO],
    ],
)
def test_a_leading_assistant_turn_goes_as_it_is(messages: list[dict[str, Any]]) -> None:
    """Anthropic has accepted a conversation opening with an assistant turn since 2024 (chat
    apps greet first, or trim a history to fit)."""
    assert converted(*messages) == [
        {"role": "assistant", "content": [text("Hi!")]},
        {"role": "user", "content": [text("hi")]},
    ]


def converted(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = body(messages=list(messages), tools=TOOLS)["messages"]
    return turns


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_leading_system_messages_are_the_system_and_later_ones_marked_turns_in_place() -> None:
    messages = [
        {"role": "system", "content": "one"},
        {"role": "developer", "content": [text("two")]},
        HELLO,
        {"role": "developer", "content": [text("three"), text(""), text("four")]},
        {"role": "system", "content": " "},
        {"role": "assistant", "content": "ok"},
    ]
    upstream_body = body(messages=messages)
    assert upstream_body["system"] == [text("one"), text("two")]
    assert upstream_body["messages"] == [
        {"role": "user", "content": [text("hi"), text("<system>three"), text("four</system>")]},
        {"role": "assistant", "content": [text("ok")]},
    ]


def test_consecutive_same_role_messages_merge() -> None:
    assert converted(
        HELLO,
        {"role": "user", "content": [text("again")]},
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "b"}]},
        {"role": "user", "content": "c"},
    ) == [
        {"role": "user", "content": [text("hi"), text("again")]},
        {"role": "assistant", "content": [text("a"), text("b")]},
        {"role": "user", "content": [text("c")]},
    ]


def test_empty_text_is_never_sent_and_an_emptied_message_disappears() -> None:
    assert converted(
        {"role": "user", "content": [text(""), text("q"), text(" \n")]},
        {"role": "assistant", "content": [text("")]},  # dropped: the users around it merge
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "")]},
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ) == [
        {"role": "user", "content": [text("q"), text("more")]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]},
    ]


def test_tool_results_and_the_user_message_after_them_share_one_turn_results_first() -> None:
    # (A user message between the results is refused, as OpenAI refuses it: test_tool_history.)
    turns = converted(
        HELLO,
        assistant_calls(call("c1"), call("c2")),
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "user", "content": "note"},
    )
    assert [block.get("tool_use_id", block["type"]) for block in turns[2]["content"]] == [
        "c1",
        "c2",
        "text",
    ]


def test_a_tool_result_with_only_blank_parts_has_no_content() -> None:
    turns = converted(
        HELLO,
        assistant_calls(call("c1")),
        {"role": "tool", "tool_call_id": "c1", "content": [text(" "), text("")]},
    )
    assert turns[2] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]}


def test_assistant_refusal_field_is_replayed_as_text() -> None:
    turns = converted(HELLO, {"role": "assistant", "content": None, "refusal": "I can't."}, HELLO)
    assert turns[1] == {"role": "assistant", "content": [text("I can't.")]}


def test_a_final_assistant_prefill_loses_its_trailing_whitespace_only() -> None:
    turns = converted(HELLO, {"role": "assistant", "content": [text(" Sure:\n"), text("  The \n")]})
    assert turns[-1]["content"] == [text(" Sure:\n"), text("  The")]


def test_a_text_before_a_tool_call_is_left_alone() -> None:
    turns = converted(
        HELLO,
        {"role": "assistant", "content": "x ", "tool_calls": [call("c")]},
        {"role": "tool", "tool_call_id": "c", "content": "1"},
    )
    assert turns[1]["content"][0] == text("x ")


def test_tool_ids_are_remapped_the_same_way_on_use_and_result() -> None:
    turns = converted(
        HELLO,
        assistant_calls(call("functions.f:0"), call("a|b"), call("call_fine-1")),
        {"role": "tool", "tool_call_id": "functions.f:0", "content": "1"},
        {"role": "tool", "tool_call_id": "a|b", "content": "2"},
        {"role": "tool", "tool_call_id": "call_fine-1", "content": "3"},
    )
    use_ids = [block["id"] for block in turns[1]["content"]]
    result_ids = [block["tool_use_id"] for block in turns[2]["content"]]
    assert use_ids == result_ids
    assert use_ids[2] == "call_fine-1"
    assert use_ids[0].startswith("functions_f_0_")
    assert all(anthropic_tool_id(tool_id) == tool_id for tool_id in use_ids)


@pytest.mark.parametrize(
    ("first", "second"), [("a.b", "a:b"), ("x y", "x_y_"), ("", "_")], ids=["dot", "space", "empty"]
)
def test_remapped_tool_ids_stay_distinct_and_valid(first: str, second: str) -> None:
    assert anthropic_tool_id(first) != anthropic_tool_id(second)
    assert anthropic_tool_id(first) == anthropic_tool_id(first)
    assert anthropic_tool_id(first) == anthropic_tool_id(anthropic_tool_id(first))


@pytest.mark.parametrize(
    ("part", "block"),
    [
        (
            {"type": "image_url", "image_url": {"url": PNG, "detail": "high"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
        ),
        (
            {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}},
        ),
        (
            {"type": "image_url", "image_url": {"url": "data:application/pdf;base64,JVBER"}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
            },
        ),
        (
            {
                "type": "file",
                "file": {"file_data": "data:application/pdf;base64,JVBER", "filename": "r.pdf"},
            },
            {
                "type": "document",
                "title": "r.pdf",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
            },
        ),
        (
            {"type": "file", "file": {"file_data": "JVBER", "filename": "R.PDF"}},
            {
                "type": "document",
                "title": "R.PDF",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
            },
        ),
    ],
    ids=["data-image", "https-image", "pdf-in-image_url", "pdf-data-url-file", "pdf-base64-file"],
)
def test_user_media_parts(part: dict[str, Any], block: dict[str, Any]) -> None:
    assert converted({"role": "user", "content": [TEXT, part]})[0]["content"] == [
        text("look"),
        block,
    ]
