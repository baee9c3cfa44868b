"""An `application/vnd.amazon.eventstream` encoder for tests and doubles, written from the format
(smithy "amazon-eventstream") and not from our decoder; test_eventstream.py checks it against
botocore's own decoder, so frames made here are the real format. Plus the frames of a realistic
Bedrock ConverseStream answer, with the random `p` padding AWS puts in every event's payload."""

from __future__ import annotations

import random
import struct
import uuid
from binascii import crc32
from dataclasses import dataclass
from typing import Any

import orjson

# Header value type codes (smithy amazon-eventstream).
BOOL_TRUE, BOOL_FALSE, BYTE, SHORT, INTEGER, LONG, BYTES, STRING, TIMESTAMP, UUID = range(10)

_INTS = {BYTE: "!b", SHORT: "!h", INTEGER: "!i", LONG: "!q", TIMESTAMP: "!q"}
_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@dataclass(frozen=True)
class Header:
    """A header with its wire type; plain `str` values in `encode_frame` are strings (type 7)."""

    type: int
    value: bool | int | bytes | str | uuid.UUID | None = None


def _header_value(header: Header) -> bytes:
    kind, value = header.type, header.value
    if kind in (BOOL_TRUE, BOOL_FALSE):
        return b""
    if kind in _INTS:
        assert isinstance(value, int)
        return struct.pack(_INTS[kind], value)
    if kind in (BYTES, STRING):
        raw = value.encode() if isinstance(value, str) else value
        assert isinstance(raw, bytes)
        return struct.pack("!H", len(raw)) + raw
    if kind == UUID:
        assert isinstance(value, uuid.UUID)
        return value.bytes
    raise ValueError(f"no header type {kind}")


def encode_headers(headers: dict[str, Header | str]) -> bytes:
    block = b""
    for name, header in headers.items():
        typed = Header(STRING, header) if isinstance(header, str) else header
        raw_name = name.encode()
        block += bytes([len(raw_name)]) + raw_name + bytes([typed.type]) + _header_value(typed)
    return block


def encode_frame(headers: dict[str, Header | str], payload: bytes = b"") -> bytes:
    """One frame: prelude (lengths, their CRC), headers, payload, CRC of everything before."""
    block = encode_headers(headers)
    total = 12 + len(block) + len(payload) + 4
    head = struct.pack("!II", total, len(block))
    prelude = head + struct.pack("!I", crc32(head) & 0xFFFFFFFF)
    body = prelude + block + payload
    return body + struct.pack("!I", crc32(body) & 0xFFFFFFFF)


def prelude(total: int, headers_length: int) -> bytes:
    head = struct.pack("!II", total, headers_length)
    return head + struct.pack("!I", crc32(head))


def framed(headers_block: bytes, payload: bytes = b"") -> bytes:
    """A frame with CRCs right around an arbitrary (maybe malformed) header block."""
    body = prelude(12 + len(headers_block) + len(payload) + 4, len(headers_block))
    body += headers_block + payload
    return body + struct.pack("!I", crc32(body))


def event_frame(event_type: str, payload: bytes) -> bytes:
    return encode_frame(
        {
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        payload,
    )


def exception_frame(exception_type: str, message: str) -> bytes:
    return encode_frame(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        orjson.dumps({"message": message}),
    )


def error_frame(code: str, message: str) -> bytes:
    return encode_frame({":error-code": code, ":error-message": message, ":message-type": "error"})


def padded(payload: dict[str, Any], rng: random.Random) -> bytes:
    """The payload as AWS sends it: the event's fields plus `p`, a padding string of random
    length (it hides the content's length from traffic analysis)."""
    return orjson.dumps({**payload, "p": _PADDING[: rng.randint(1, len(_PADDING))]})


CONVERSE_EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("messageStart", {"role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Let me check "}}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "the weather — ☀️."}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    (
        "contentBlockStart",
        {
            "contentBlockIndex": 1,
            "start": {
                "toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "get_weather"}
            },
        },
    ),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": ""}}}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '"Paris"}'}}}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
    ("messageStop", {"stopReason": "tool_use"}),
    (
        "metadata",
        {
            "usage": {"inputTokens": 412, "outputTokens": 58, "totalTokens": 470},
            "metrics": {"latencyMs": 512},
        },
    ),
]


def converse_stream(seed: str = "converse") -> tuple[bytes, list[tuple[str, bytes]]]:
    """The body of a ConverseStream answer and its (event type, payload) pairs, in order."""
    rng = random.Random(seed)
    pairs = [(name, padded(payload, rng)) for name, payload in CONVERSE_EVENTS]
    return b"".join(event_frame(name, payload) for name, payload in pairs), pairs
