"""The SSE decoder against the WHATWG rules, and its independence from network chunking."""

from __future__ import annotations

import pytest

from app.sse import SSEDecoder, SSEEvent, data_frame


def decode(*parts: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [event for part in parts for event in decoder.feed(part)]
    return events + decoder.flush()


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data: a\n\n", [SSEEvent("a")]),
        (b"data:a\n\n", [SSEEvent("a")]),
        (b"data:  two spaces\n\n", [SSEEvent(" two spaces")]),
        (b"data: a\r\n\r\n", [SSEEvent("a")]),
        (b"data: a\r\rdata: b\r\r", [SSEEvent("a"), SSEEvent("b")]),
        (b"data: one\ndata: two\n\n", [SSEEvent("one\ntwo")]),
        (b": keep-alive\n\ndata: x\n\n", [SSEEvent("x")]),
        (b"event: ping\ndata: {}\n\n", [SSEEvent("{}", "ping")]),
        (b"event: lonely\n\ndata: x\n\n", [SSEEvent("x")]),
        (b"id: 7\ndata: x\n\n", [SSEEvent("x", None, "7")]),
        (b"retry: 100\nunknown: y\ndata: x\n\n", [SSEEvent("x")]),
        (b"data\n\n", [SSEEvent("")]),
        (b"\n\n\n", []),
        (b"data: [DONE]", [SSEEvent("[DONE]")]),
    ],
)
def test_decodes_spec_cases(stream: bytes, expected: list[SSEEvent]) -> None:
    assert decode(stream) == expected


def test_unicode_line_separators_inside_json_are_not_line_breaks() -> None:
    # U+2028, U+2029 and U+0085 are legal inside JSON strings; str.splitlines() splits on them.
    payload = '{"content":"a\u2028b\u2029c\x85d"}'
    assert decode(data_frame(payload.encode())) == [SSEEvent(payload)]


STREAM = b"".join(
    [
        b'event: message_start\r\ndata: {"type":"message_start"}\r\n\r\n',
        b": ping\n\n",
        'data: {"text":"caf\u00e9 \u2028 \U0001f600"}\n\n'.encode(),
        b"data: line1\ndata: line2\r\r",
        b"data: [DONE]\n\n",
    ]
)


@pytest.mark.parametrize("split", range(1, len(STREAM)))
def test_any_split_in_two_gives_the_same_events(split: int) -> None:
    assert decode(STREAM[:split], STREAM[split:]) == decode(STREAM)


def test_byte_by_byte_gives_the_same_events() -> None:
    one_by_one = [STREAM[i : i + 1] for i in range(len(STREAM))]
    assert decode(*one_by_one) == decode(STREAM)
    assert len(decode(STREAM)) == 4
