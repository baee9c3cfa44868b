"""The Bedrock event stream decoder past its CRCs: frames whose prelude and message CRCs are
right around random header blocks (well-formed, truncated, of unknown types, with bad lengths or
bad UTF-8) and random payloads, so header and payload parsing are what is fuzzed (random bytes
almost never get past the prelude CRC). Only a decoded event or UpstreamProtocolError may come
out, however the bytes are cut."""

from __future__ import annotations

import struct

from hypothesis import event, given, settings
from hypothesis import strategies as st

from app.errors import UpstreamProtocolError
from app.sse import SSEEvent
from app.translators.bedrock.eventstream import EventStreamDecoder
from tests.helpers.bedrock_eventstream import encode_headers, framed

MESSAGE_TYPES = ["event", "exception", "error", "ping", ""]
NAMES = [":message-type", ":event-type", ":exception-type", ":error-code", ":error-message"]


@st.composite
def raw_header(draw: st.DrawFn) -> bytes:
    """One header entry as bytes, anything from well-formed to nonsense: a name (maybe one the
    decoder reads, maybe not UTF-8), a type byte (the ten known ones and others), and a value
    whose length prefix may or may not match it."""
    name = draw(st.one_of(st.sampled_from(NAMES).map(str.encode), st.binary(max_size=12)))
    kind = draw(st.one_of(st.integers(0, 9), st.integers(0, 255)))
    value = draw(st.binary(max_size=24))
    if kind in (6, 7) and draw(st.booleans()):
        value = struct.pack("!H", len(value)) + value  # a bytes/string value, length right
    name_length = draw(st.one_of(st.just(len(name)), st.integers(0, 255)))
    return bytes([name_length % 256]) + name + bytes([kind]) + value


@st.composite
def header_block(draw: st.DrawFn) -> bytes:
    """Often a real message-type header first (so the decoder gets as far as reading the
    event, exception or error), then random entries, maybe cut anywhere."""
    block = b""
    if draw(st.booleans()):
        typed = {":message-type": draw(st.sampled_from(MESSAGE_TYPES))}
        names = st.sampled_from(NAMES[1:])
        texts = st.text(max_size=20)
        typed |= draw(st.dictionaries(names, texts, max_size=3))
        block = encode_headers(typed)  # type: ignore[arg-type]
    block += b"".join(draw(st.lists(raw_header(), max_size=4)))
    cut = draw(st.integers(0, len(block)))
    return block[:cut] if draw(st.booleans()) else block


payloads = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=40).map(str.encode),
    st.just(b'{"message": "throttled"}'),
)
frames = st.builds(framed, header_block(), payloads)


@settings(max_examples=500, deadline=None)
@given(st.lists(frames, min_size=1, max_size=3), st.data())
def test_frames_with_right_crcs_around_anything_give_events_or_protocol_errors(
    body_frames: list[bytes], data: st.DataObject
) -> None:
    body = b"".join(body_frames)
    cut = data.draw(st.integers(0, len(body)), label="cut")
    decoder = EventStreamDecoder()
    try:
        events = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.flush()
    except UpstreamProtocolError as refused:
        message = refused.message
    else:
        message = None
    if message is not None:
        assert "CRC" not in message  # the CRCs are right: the refusal is about the rest
        event(message)  # --hypothesis-show-statistics: which checks the fuzz reached
        return
    event(f"{len(events)} events")
    for decoded in events:
        assert isinstance(decoded, SSEEvent)
        assert isinstance(decoded.data, str)
        assert isinstance(decoded.event, str)
