"""Sans-IO decoder for `application/vnd.amazon.eventstream`, the binary framing of Bedrock's
`/converse-stream` (smithy "amazon-eventstream"; botocore's `eventstream.py` is the reference).

A frame, big-endian:

    [total_len u32][headers_len u32][prelude_crc u32 = CRC32 of the 8 bytes before it]
    [headers: name_len u8, name, type u8, value]*  [payload]  [message_crc u32 = CRC32 of all
    bytes before it]

`EventStreamDecoder` has `SSEDecoder`'s shape (`feed`, `flush`, `idle`) so the relay drives
either: each frame becomes one `SSEEvent` whose `data` is the payload (JSON text) and whose
`event` names it:

- `:message-type: event`: `event` is the `:event-type` header (`messageStart`,
  `contentBlockDelta`, ..., `metadata`).
- `:message-type: exception`: `event` is `"exception:" + :exception-type` (e.g.
  `exception:throttlingException`); `data` is the payload, `{"message": "..."}`.
- `:message-type: error`: `event` is `"error:" + :error-code`; the message is in the
  `:error-message` header, not the payload, so `data` is made `{"message": "..."}` too and a
  stream translator reads both kinds of failure the same way.

Anything that is not this framing (a bad CRC, impossible lengths, an unknown header type, a
frame cut short at the end) raises `UpstreamProtocolError`: a corrupt frame must end the stream
as an error, never be guessed at. Speed matters (one call per upstream read): complete frames
are parsed in place with `struct.unpack_from` over the read's bytes; only a frame split across
reads is buffered.
"""

from __future__ import annotations

import struct
import uuid
from binascii import crc32

import orjson

from app.errors import UpstreamProtocolError
from app.sse import SSEEvent

EXCEPTION_PREFIX = "exception:"
ERROR_PREFIX = "error:"

PRELUDE_LENGTH = 12
MIN_FRAME = PRELUDE_LENGTH + 4  # prelude and message CRC, no headers, no payload
MAX_FRAME = 16 * 1024 * 1024  # a sane bound: Converse frames are a few hundred bytes
MAX_HEADERS = 128 * 1024  # botocore's bound

HeaderValue = bool | int | bytes | str | uuid.UUID

_PRELUDE = struct.Struct("!III")
_U32 = struct.Struct("!I")
_U16 = struct.Struct("!H")
# Fixed-size header value types: type byte -> (format, size). 8 (timestamp) is milliseconds
# since the epoch, an int as in botocore.
_FIXED = {
    2: struct.Struct("!b"),
    3: struct.Struct("!h"),
    4: struct.Struct("!i"),
    5: struct.Struct("!q"),
    8: struct.Struct("!q"),
}
_UUID_SIZE = 16

# An event frame's header block (bytes) -> its :event-type. A stream's frames repeat a handful
# of blocks (`:event-type`, `:content-type`, `:message-type`, the same for every
# contentBlockDelta), so after the first of each a frame's headers cost one dict look-up instead
# of a parse. A memo of a pure function, emptied when full so an odd upstream cannot grow it.
_EVENT_TYPES: dict[bytes, str] = {}
_EVENT_TYPES_LIMIT = 256


class EventStreamDecoder:
    """Feed it bytes as they arrive, in any split; it returns each frame's event once the frame
    is complete and its CRCs check."""

    __slots__ = ("_need", "_pending")

    def __init__(self) -> None:
        self._pending = bytearray()  # the start of a frame that has not all arrived
        self._need = PRELUDE_LENGTH  # bytes `_pending` must hold before decoding is worth it

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        pending = self._pending
        if pending:
            pending += chunk
            if len(pending) < self._need:
                return []
            data = bytes(pending)
            pending.clear()
        else:
            data = chunk if type(chunk) is bytes else bytes(chunk)
        events, used = _decode(data)
        if used < len(data):
            pending += memoryview(data)[used:]
            self._need = _needed(pending)
        return events

    @property
    def idle(self) -> bool:
        """Between frames: nothing buffered."""
        return not self._pending

    def flush(self) -> list[SSEEvent]:
        """End of stream. Every complete frame was returned by `feed`; bytes left over are a frame
        cut short, which a well-formed stream never ends on."""
        if self._pending:
            left = len(self._pending)
            self._pending.clear()
            raise UpstreamProtocolError(
                f"The upstream's event stream ended inside a frame ({left} bytes of an "
                "incomplete frame)."
            )
        return []


def _needed(pending: bytearray) -> int:
    """The bytes a partial frame must reach before it can be decoded: its prelude, then (the
    prelude already checked by `_decode`) its whole length."""
    if len(pending) < PRELUDE_LENGTH:
        return PRELUDE_LENGTH
    total: int = _U32.unpack_from(pending)[0]
    return total


def _decode(data: bytes) -> tuple[list[SSEEvent], int]:
    """Every complete frame in `data`, and how many bytes they used. A frame's prelude is
    checked as soon as it has arrived, so a corrupt one fails without waiting for its body.
    (Slices here copy one frame's part at most: for frames of a few hundred bytes that is
    cheaper than memoryview slices, and the buffer as a whole is never copied per frame.)"""
    events: list[SSEEvent] = []
    pos = 0
    size = len(data)
    while size - pos >= PRELUDE_LENGTH:
        total, headers_length = _prelude(data, pos)
        end = pos + total
        if end > size:
            break
        payload_end = end - 4
        if crc32(data[pos:payload_end]) != _U32.unpack_from(data, payload_end)[0]:
            raise UpstreamProtocolError("An upstream event stream frame failed its message CRC.")
        headers_end = pos + PRELUDE_LENGTH + headers_length
        block = data[pos + PRELUDE_LENGTH : headers_end]
        event_type = _EVENT_TYPES.get(block)
        if event_type is None:
            events.append(_event(block, data[headers_end:payload_end]))
        else:
            events.append(SSEEvent(_text(data[headers_end:payload_end]), event_type))
        pos = end
    return events, pos


def _prelude(data: bytes, pos: int) -> tuple[int, int]:
    """A frame's total and headers lengths, once its prelude CRC and lengths check."""
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(data, pos)
    if crc32(data[pos : pos + 8]) != prelude_crc:
        raise UpstreamProtocolError("An upstream event stream frame failed its prelude CRC.")
    if not MIN_FRAME <= total <= MAX_FRAME:
        raise UpstreamProtocolError(
            f"An upstream event stream frame has an impossible length ({total} bytes)."
        )
    if headers_length > min(total - MIN_FRAME, MAX_HEADERS):
        raise UpstreamProtocolError(
            f"An upstream event stream frame's headers ({headers_length} bytes) do not fit "
            f"in the frame ({total} bytes)."
        )
    return total, headers_length


def decode_headers(block: bytes) -> dict[str, HeaderValue]:
    """A frame's header block, every value type parsed (the decoder uses only strings)."""
    headers: dict[str, HeaderValue] = {}
    pos, end = 0, len(block)
    while pos < end:
        name_end = pos + 1 + block[pos]
        if name_end >= end:  # the type byte must follow the name
            raise UpstreamProtocolError("An upstream event stream header runs past its block.")
        name = _text(block[pos + 1 : name_end])
        if name in headers:
            raise UpstreamProtocolError(f"An upstream event stream header repeats: {name!r}.")
        headers[name], pos = _value(block, block[name_end], name_end + 1)
    return headers


def _value(block: bytes, kind: int, pos: int) -> tuple[HeaderValue, int]:
    """One header value of type `kind` at `pos`, and the position after it."""
    if kind <= 1:  # 0 true, 1 false: no value bytes
        return kind == 0, pos
    fixed = _FIXED.get(kind)
    if fixed is not None:
        value_end = _within(block, pos + fixed.size)
        value: int = fixed.unpack_from(block, pos)[0]
        return value, value_end
    if kind in (6, 7):  # bytes, string: u16 length then the bytes
        value_end = _within(block, _within(block, pos + 2) + _U16.unpack_from(block, pos)[0])
        raw = block[pos + 2 : value_end]
        return (raw if kind == 6 else _text(raw)), value_end
    if kind == 9:
        value_end = _within(block, pos + _UUID_SIZE)
        return uuid.UUID(bytes=block[pos:value_end]), value_end
    raise UpstreamProtocolError(f"An upstream event stream header has an unknown type ({kind}).")


def _within(block: bytes, value_end: int) -> int:
    """`value_end`, once it is inside the header block."""
    if value_end > len(block):
        raise UpstreamProtocolError("An upstream event stream header runs past its block.")
    return value_end


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise UpstreamProtocolError("An upstream event stream frame is not valid UTF-8.") from exc


def _event(block: bytes, payload: bytes) -> SSEEvent:
    """The frame as the event a stream translator reads (see the module's docstring), its
    header block parsed in full; an event frame's block is remembered with its event type."""
    headers = decode_headers(block)
    message_type = headers.get(":message-type")
    if message_type == "event":
        event_type = headers.get(":event-type")
        if not isinstance(event_type, str):
            raise UpstreamProtocolError("An upstream event frame has no :event-type.")
        event = SSEEvent(_text(payload), event_type)
        if len(_EVENT_TYPES) >= _EVENT_TYPES_LIMIT:
            _EVENT_TYPES.clear()  # junk filled it: start again rather than stop remembering
        _EVENT_TYPES[block] = event_type
        return event
    if message_type == "exception":
        return SSEEvent(_text(payload), EXCEPTION_PREFIX + _string(headers, ":exception-type"))
    if message_type == "error":
        message = orjson.dumps({"message": _string(headers, ":error-message")}).decode()
        return SSEEvent(message, ERROR_PREFIX + _string(headers, ":error-code"))
    raise UpstreamProtocolError(
        f"An upstream event stream frame has an unknown :message-type ({message_type!r})."
    )


def _string(headers: dict[str, HeaderValue], name: str) -> str:
    """A string header a failure frame should carry; absent, an empty string (the failure is
    still reported, with less detail)."""
    value = headers.get(name, "")
    if not isinstance(value, str):
        raise UpstreamProtocolError(f"An upstream event stream header {name} is not a string.")
    return value
