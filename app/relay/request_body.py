"""A passed-through request's body, read only as far as its `model` (a JSON field, or a
multipart/form-data field found with python-multipart's streaming parser), that model
swapped for the upstream's id, and the rest streamed from the client as it arrives: an upload
never sits whole in the proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.types import Receive

from app.errors import InvalidRequest

FORM_SEARCH_LIMIT = 1 << 20
"""Bytes of a multipart body read while looking for its `model` field. The SDKs send form
fields before files, so the field comes in the first few hundred bytes; past this the body is
taken to have none, and what was read is replayed unchanged."""
JSON_LIMIT = 32 << 20
"""A JSON body is read whole to find its `model` (OpenAI's JSON bodies are small: uploads go
as multipart); a larger one is refused rather than held."""
MODEL_VALUE_LIMIT = 1024


class ClientGone(Exception):
    """The client hung up while its body was being read."""


class BodyTooLarge(InvalidRequest):
    status = 413


class ClientBody:
    """The client's body as ASGI delivers it, chunk by chunk; `complete` once the last came,
    `gone` once the client hung up instead."""

    __slots__ = ("_receive", "complete", "gone")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.complete = False
        self.gone = False

    async def next_chunk(self) -> bytes:
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.gone = True
            raise ClientGone
        self.complete = not message.get("more_body", False)
        chunk: bytes = message.get("body", b"")
        return chunk

    async def rest(self, head: bytes) -> AsyncIterator[bytes]:
        """`head` (what was read already, maybe rewritten), then the body still to come."""
        if head:
            yield head
        while not self.complete:
            chunk = await self.next_chunk()
            if chunk:
                yield chunk


@dataclass(frozen=True, slots=True)
class BodyHead:
    """The start of a body (the whole of it when `ClientBody.complete`) and the model it names:
    a JSON body's parsed object, or where a form field's value lies in `head`."""

    head: bytes
    model: str | None = None
    json_body: dict[str, Any] | None = None
    span: tuple[int, int] | None = None

    def with_model(self, upstream_model: str | None) -> bytes:
        """`head` with the model replaced by `upstream_model`: a JSON body re-serialised (its
        keys in their order), a form only that field's value rewritten, byte for byte."""
        if upstream_model is None or upstream_model == self.model:
            return self.head
        if self.json_body is not None:
            return orjson.dumps({**self.json_body, "model": upstream_model})
        if self.span is not None:
            start, end = self.span
            return self.head[:start] + upstream_model.encode() + self.head[end:]
        return self.head


async def read_head(body: ClientBody, content_type: bytes | None) -> BodyHead:
    """Reads as much of the body as finding its model takes: a JSON body whole, a form up to
    the end of its `model` field (or FORM_SEARCH_LIMIT), anything else only its first chunk."""
    first = await body.next_chunk()
    mime, options = parse_options_header(content_type)
    if body.complete and not first:
        return BodyHead(first)
    if mime == b"application/json":
        return await _read_json(body, first)
    boundary = options.get(b"boundary")
    if mime == b"multipart/form-data" and boundary:
        return await _scan_form(body, first, boundary)
    return BodyHead(first)


async def _read_json(body: ClientBody, first: bytes) -> BodyHead:
    parts, size = [first], len(first)
    while not body.complete:
        chunk = await body.next_chunk()
        size += len(chunk)
        if size > JSON_LIMIT:
            raise BodyTooLarge(f"A JSON body may be at most {JSON_LIMIT >> 20} MiB.")
        parts.append(chunk)
    raw = b"".join(parts)
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise InvalidRequest("The request body is not valid JSON.") from None
    if not isinstance(parsed, dict) or "model" not in parsed:
        return BodyHead(raw)
    model = parsed["model"]
    if not isinstance(model, str) or not model:
        raise InvalidRequest("`model` must be a non-empty string.", param="model")
    return BodyHead(raw, model=model, json_body=parsed)


async def _scan_form(body: ClientBody, first: bytes, boundary: bytes) -> BodyHead:
    scan = _FormScan(boundary)
    head, chunk = bytearray(), first
    while True:
        head += chunk
        try:
            scan.parser.write(chunk)
        except FormParserError:
            raise InvalidRequest("The multipart/form-data body is malformed.") from None
        if scan.found is not None:
            break
        if body.complete or len(head) > FORM_SEARCH_LIMIT:
            return BodyHead(bytes(head))
        chunk = await body.next_chunk()
    read = bytes(head)
    span = _value_span(read, boundary, scan.found)
    model = read[span[0] : span[1]]
    if model != scan.value:
        raise InvalidRequest("The multipart `model` field could not be read.", param="model")
    try:
        return BodyHead(read, model=model.decode(), span=span)
    except UnicodeDecodeError:
        raise InvalidRequest("`model` must be UTF-8 text.", param="model") from None


def _value_span(head: bytes, boundary: bytes, part_index: int) -> tuple[int, int]:
    """Where the value of part `part_index` lies in `head`: between the blank line after its
    headers and the next delimiter (a value cannot contain one: RFC 2046 5.1.1)."""
    delimiter = b"\r\n--" + boundary
    position = head.find(b"--" + boundary)  # the first delimiter has no CRLF before it
    for _ in range(part_index):
        position = head.find(delimiter, position + 1)
    start = head.find(b"\r\n\r\n", position) + 4
    return start, head.find(delimiter, start)


class _FormScan:
    """python-multipart's callbacks, noting which part is the `model` field (a part named
    `model` without a filename) and its value; `found` is its index once the part ended."""

    def __init__(self, boundary: bytes) -> None:
        self.part = -1
        self.found: int | None = None
        self.value = b""
        self._in_model = False
        self._field = self._header = b""
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
            },
        )

    def _part_begin(self) -> None:
        self.part += 1
        self._in_model = False

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._header += data[start:end]

    def _header_end(self) -> None:
        if self._field.strip().lower() == b"content-disposition":
            _, options = parse_options_header(self._header)
            self._in_model = options.get(b"name") == b"model" and b"filename" not in options
        self._field = self._header = b""

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_model and self.found is None and len(self.value) <= MODEL_VALUE_LIMIT:
            self.value += data[start:end]

    def _part_end(self) -> None:
        if self._in_model and self.found is None:
            self.found = self.part
