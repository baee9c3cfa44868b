"""The Bedrock event stream decoder. The frames come from the test helpers' own encoder, which is
first checked against botocore's decoder and service model (so they are the real format); then
ours must decode them however the bytes are split, and refuse every corruption with
UpstreamProtocolError and nothing else."""

from __future__ import annotations

import random
import uuid
from typing import Any

import orjson
import pytest
from botocore.eventstream import EventStream, EventStreamBuffer, EventStreamHeaderParser
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser
from botocore.session import get_session
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import UpstreamProtocolError
from app.sse import SSEEvent
from app.translators.bedrock.eventstream import (
    _EVENT_TYPES,
    _EVENT_TYPES_LIMIT,
    ERROR_PREFIX,
    EXCEPTION_PREFIX,
    MAX_FRAME,
    EventStreamDecoder,
    decode_headers,
)
from tests.helpers.bedrock_eventstream import (
    BOOL_FALSE,
    BOOL_TRUE,
    BYTE,
    BYTES,
    CONVERSE_EVENTS,
    INTEGER,
    LONG,
    SHORT,
    STRING,
    TIMESTAMP,
    UUID,
    Header,
    converse_stream,
    encode_frame,
    encode_headers,
    error_frame,
    event_frame,
    exception_frame,
    framed,
    prelude,
)
from tests.helpers.byte_splits import byte_splits

AN_ID = uuid.UUID("12345678-9abc-4def-8123-456789abcdef")
EVERY_TYPE: dict[str, Header | str] = {
    "true": Header(BOOL_TRUE),
    "false": Header(BOOL_FALSE),
    "byte": Header(BYTE, -7),
    "short": Header(SHORT, -30000),
    "int": Header(INTEGER, 2_000_000_000),
    "long": Header(LONG, -(2**62)),
    "bytes": Header(BYTES, b"\x00\xff raw"),
    "string": Header(STRING, "héllo ☃"),
    "timestamp": Header(TIMESTAMP, 1_700_000_000_123),
    "uuid": Header(UUID, AN_ID),
    ":message-type": "event",
    ":event-type": "messageStart",
}
# What botocore's parser gives for EVERY_TYPE (it leaves uuids as their 16 bytes).
EVERY_TYPE_PARSED: dict[str, Any] = {
    "true": True,
    "false": False,
    "byte": -7,
    "short": -30000,
    "int": 2_000_000_000,
    "long": -(2**62),
    "bytes": b"\x00\xff raw",
    "string": "héllo ☃",
    "timestamp": 1_700_000_000_123,
    "uuid": AN_ID.bytes,
    ":message-type": "event",
    ":event-type": "messageStart",
}


def decode_all(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = EventStreamDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    assert decoder.idle
    return events + decoder.flush()


def botocore_messages(body: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(message.headers, message.payload) for message in buffer]


class _RawStream:
    """The body object botocore's EventStream reads (`stream()` yields the chunks)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self) -> list[bytes]:
        return [self._body[i : i + 37] for i in range(0, len(self._body), 37)]

    def close(self) -> None:
        pass


def botocore_converse_events(body: bytes) -> list[dict[str, Any]]:
    """The events boto3's `converse_stream` would hand its caller for this body."""
    operation = get_session().get_service_model("bedrock-runtime").operation_model("ConverseStream")
    shape = operation.output_shape.members["stream"]
    stream = EventStream(_RawStream(body), shape, EventStreamJSONParser(), operation.name)
    return list(stream)


# The helpers' encoder against botocore.


def test_the_encoder_writes_what_botocore_reads() -> None:
    body, pairs = converse_stream()
    messages = botocore_messages(body)
    assert [payload for _, payload in messages] == [payload for _, payload in pairs]
    assert [headers for headers, _ in messages] == [
        {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
        for name, _ in pairs
    ]


def test_botocore_parses_the_converse_stream_with_bedrocks_service_model() -> None:
    body, _ = converse_stream()
    events = botocore_converse_events(body)
    assert events == [{name: payload} for name, payload in CONVERSE_EVENTS]


def test_botocore_reads_every_header_type_as_the_encoder_meant() -> None:
    assert EventStreamHeaderParser().parse(encode_headers(EVERY_TYPE)) == EVERY_TYPE_PARSED
    [(headers, payload)] = botocore_messages(encode_frame(EVERY_TYPE, b"{}"))
    assert (headers, payload) == (EVERY_TYPE_PARSED, b"{}")


def test_botocore_raises_the_exception_frame_as_bedrock_throttling() -> None:
    with pytest.raises(EventStreamError) as raised:
        botocore_converse_events(exception_frame("throttlingException", "Too many requests"))
    assert raised.value.response["Error"] == {
        "Code": "throttlingException",
        "Message": "Too many requests",
    }


def test_botocore_reads_the_error_frame() -> None:
    [(headers, payload)] = botocore_messages(error_frame("InternalFailure", "boom"))
    assert headers == {
        ":error-code": "InternalFailure",
        ":error-message": "boom",
        ":message-type": "error",
    }
    assert payload == b""


# Our decoder.


def test_a_converse_stream_decodes_to_its_events() -> None:
    body, pairs = converse_stream()
    assert decode_all([body]) == [SSEEvent(payload.decode(), name) for name, payload in pairs]
    decoded = [orjson.loads(event.data) for event in decode_all([body])]
    assert [{k: v for k, v in event.items() if k != "p"} for event in decoded] == [
        payload for _, payload in CONVERSE_EVENTS
    ]


def test_every_split_gives_the_same_events() -> None:
    body, pairs = converse_stream()
    expected = [SSEEvent(payload.decode(), name) for name, payload in pairs]
    for cut in range(len(body) + 1):
        assert decode_all([body[:cut], body[cut:]]) == expected, cut
    for pieces in byte_splits(body, "bedrock-eventstream", random_splits=200):
        assert decode_all(pieces) == expected


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_multi_splits_give_the_same_events(data: st.DataObject) -> None:
    body, pairs = converse_stream(data.draw(st.text(max_size=8), label="seed"))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=40), label="cuts"))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode_all(pieces) == [SSEEvent(payload.decode(), name) for name, payload in pairs]


def test_an_exception_frame_names_its_type() -> None:
    _, pairs = converse_stream()
    stream = event_frame(*pairs[0]) + exception_frame("throttlingException", "Too many requests")
    events = decode_all([stream])
    assert events[1] == SSEEvent('{"message":"Too many requests"}', "exception:throttlingException")
    assert events[1].event is not None
    assert events[1].event.startswith(EXCEPTION_PREFIX)


def test_an_error_frame_gives_its_message_as_an_exceptions_payload() -> None:
    [event] = decode_all([error_frame("InternalFailure", 'it "broke"')])
    assert event.event == ERROR_PREFIX + "InternalFailure"
    assert orjson.loads(event.data) == {"message": 'it "broke"'}


def test_every_header_type_is_parsed() -> None:
    parsed = decode_headers(encode_headers(EVERY_TYPE))
    assert parsed == {**EVERY_TYPE_PARSED, "uuid": AN_ID}
    assert decode_all([encode_frame(EVERY_TYPE, b"{}")]) == [SSEEvent("{}", "messageStart")]


def test_an_empty_stream_and_an_empty_read_give_nothing() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(b"") == []
    assert decoder.idle
    assert decoder.flush() == []


# Corruption: UpstreamProtocolError, and nothing else.


def flipped(frame: bytes, bit: int) -> bytes:
    corrupt = bytearray(frame)
    corrupt[bit // 8] ^= 1 << (bit % 8)
    return bytes(corrupt)


def refused(body: bytes) -> str:
    with pytest.raises(UpstreamProtocolError) as raised:
        decode_all([body])
    return raised.value.message


def test_every_single_bit_flip_is_refused() -> None:
    """Prelude, headers, payload or message CRC: each flip breaks a CRC or a length."""
    frame = event_frame("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"hi"}}')
    for bit in range(len(frame) * 8):
        with pytest.raises(UpstreamProtocolError):
            decode_all([flipped(frame, bit)])


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (lambda frame: 4 * 8 + 3, "prelude CRC"),  # the headers' length
        (lambda frame: 9 * 8, "prelude CRC"),  # the prelude CRC itself
        (lambda frame: 14 * 8, "message CRC"),  # a header's name
        (lambda frame: (len(frame) - 6) * 8, "message CRC"),  # the payload
        (lambda frame: (len(frame) - 1) * 8, "message CRC"),  # the message CRC
    ],
)
def test_each_corruption_says_what_failed(where: Any, expected: str) -> None:
    frame = event_frame("messageStop", b'{"stopReason":"end_turn"}')
    assert expected in refused(flipped(frame, where(frame)))


def test_a_corrupt_prelude_fails_before_the_frame_has_arrived() -> None:
    frame = flipped(event_frame("messageStop", b'{"stopReason":"end_turn"}'), 3)
    with pytest.raises(UpstreamProtocolError, match="prelude CRC"):
        EventStreamDecoder().feed(frame[:12])


def test_a_stream_cut_short_fails_at_flush() -> None:
    body, _ = converse_stream()
    for cut in (1, 11, 12, 40, len(body) - 1):
        decoder = EventStreamDecoder()
        decoder.feed(body[:cut])
        assert not decoder.idle
        with pytest.raises(UpstreamProtocolError, match="ended inside a frame"):
            decoder.flush()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (prelude(15, 0) + b"\0" * 3, "impossible length"),
        (prelude(MAX_FRAME + 1, 0), "impossible length"),
        (prelude(100, 85), "do not fit"),
        (framed(b"\x01a\x0a"), "unknown type"),
        (framed(b"\x01a\x07\x00\x09abc"), "runs past"),
        (framed(b"\x05abc"), "runs past"),
        (framed(b"\x01a\x04\x00\x00"), "runs past"),
        (framed(b"\x01a\x09" + b"\0" * 15), "runs past"),
        (framed(b"\x01\xff\x00"), "not valid UTF-8"),
        (framed(encode_headers({"a": "x"}) + encode_headers({"a": "y"})), "repeats"),
        (framed(encode_headers({":message-type": "event"})), "no :event-type"),
        (framed(encode_headers({":message-type": "ping"})), "unknown :message-type"),
        (framed(b""), "unknown :message-type"),
        (framed(encode_headers({":message-type": "event", ":event-type": "x"}), b"\xff"), "UTF-8"),
        (
            framed(
                encode_headers(
                    {":message-type": "exception", ":exception-type": Header(INTEGER, 1)}
                )
            ),
            "not a string",
        ),
    ],
)
def test_malformed_frames_are_refused(body: bytes, expected: str) -> None:
    assert expected in refused(body)


def test_the_same_frames_split_anywhere_fail_the_same_way() -> None:
    body, _ = converse_stream()
    corrupt = flipped(body, (len(body) - 2) * 8)  # the last frame's message CRC
    for pieces in byte_splits(corrupt, "corrupt", random_splits=20):
        with pytest.raises(UpstreamProtocolError, match="message CRC"):
            decode_all(pieces)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8))
def test_random_bytes_raise_nothing_but_protocol_errors(pieces: list[bytes]) -> None:
    decoder = EventStreamDecoder()
    try:
        for piece in pieces:
            decoder.feed(piece)
        decoder.flush()
    except UpstreamProtocolError:
        pass


header_values = st.one_of(
    st.builds(Header, st.sampled_from([BOOL_TRUE, BOOL_FALSE])),
    st.builds(Header, st.just(BYTE), st.integers(-128, 127)),
    st.builds(Header, st.just(SHORT), st.integers(-(2**15), 2**15 - 1)),
    st.builds(Header, st.just(INTEGER), st.integers(-(2**31), 2**31 - 1)),
    st.builds(Header, st.sampled_from([LONG, TIMESTAMP]), st.integers(-(2**63), 2**63 - 1)),
    st.builds(Header, st.just(BYTES), st.binary(max_size=40)),
    st.text(max_size=40),
    st.builds(Header, st.just(UUID), st.uuids()),
)
header_names = st.text(min_size=1, max_size=20).filter(lambda name: not name.startswith(":"))


@st.composite
def random_frames(draw: st.DrawFn) -> tuple[bytes, SSEEvent]:
    """An event frame with arbitrary extra headers of every type, and the event it must give."""
    event = SSEEvent(draw(st.text(max_size=200)), draw(st.text(max_size=30)))
    extra = draw(st.dictionaries(header_names, header_values, max_size=5))
    headers = {**extra, ":message-type": "event", ":event-type": event.event or ""}
    return encode_frame(headers, event.data.encode()), event


@settings(max_examples=300, deadline=None)
@given(st.lists(random_frames(), min_size=1, max_size=4), st.data())
def test_random_frames_decode_exactly_and_any_bit_flip_is_refused(
    frames: list[tuple[bytes, SSEEvent]], data: st.DataObject
) -> None:
    """botocore reads each frame; ours gives its event however the bytes are cut, and with
    any one bit flipped refuses with UpstreamProtocolError (CRC32 catches every single-bit
    error), never another exception."""
    body = b"".join(frame for frame, _ in frames)
    assert len(botocore_messages(body)) == len(frames)
    cut = data.draw(st.integers(0, len(body)), label="cut")
    assert decode_all([body[:cut], body[cut:]]) == [event for _, event in frames]
    corrupt = flipped(body, data.draw(st.integers(0, len(body) * 8 - 1), label="bit"))
    with pytest.raises(UpstreamProtocolError):
        decode_all([corrupt[:cut], corrupt[cut:]])


def test_a_read_may_end_anywhere_among_many_frames() -> None:
    rng = random.Random(7)
    body, pairs = converse_stream()
    body *= 50
    expected = [SSEEvent(payload.decode(), name) for name, payload in pairs] * 50
    decoder = EventStreamDecoder()
    events: list[SSEEvent] = []
    pos = 0
    while pos < len(body):
        step = rng.choice([1, 7, 64, 300, 4096])
        events += decoder.feed(body[pos : pos + step])
        pos += step
    assert events + decoder.flush() == expected


def test_a_large_frame_in_small_reads_is_buffered_not_reparsed() -> None:
    """A 4 MiB payload in 4 KiB reads: the decoder waits for the whole frame (quadratic
    re-copying would take seconds here)."""
    payload = b'{"text":"' + b"x" * (4 * 1024 * 1024) + b'"}'
    body = event_frame("contentBlockDelta", payload)
    decoder = EventStreamDecoder()
    events: list[SSEEvent] = []
    for pos in range(0, len(body), 4096):
        events += decoder.feed(body[pos : pos + 4096])
    assert events == [SSEEvent(payload.decode(), "contentBlockDelta")]


def test_reads_may_be_bytearrays_or_memoryviews() -> None:
    body, pairs = converse_stream()
    half = len(body) // 2
    events = decode_all([bytearray(body[:half]), memoryview(body)[half:]])  # type: ignore[list-item]
    assert events == [SSEEvent(payload.decode(), name) for name, payload in pairs]


def test_the_header_memo_stays_bounded() -> None:
    frames = [event_frame(f"event{n}", b"{}") for n in range(_EVENT_TYPES_LIMIT + 50)]
    events = decode_all(frames)
    assert [event.event for event in events] == [f"event{n}" for n in range(len(frames))]
    assert len(_EVENT_TYPES) <= _EVENT_TYPES_LIMIT
    # Once junk has filled it, the frames that follow are still remembered.
    body, pairs = converse_stream()
    assert decode_all([body]) == [SSEEvent(payload.decode(), name) for name, payload in pairs]
    assert event_frame("messageStart", b"")[12:-4] in _EVENT_TYPES
