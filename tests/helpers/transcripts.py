"""What the cloud kinds' transcript tests share (tests/unit/translators/{vertex,azure}): a case
directory's forms, comparing with (or rewriting) its computed files, and the client's view of a
stream fed through the real SSE decoder in any pieces.

A case directory holds client_request.json, upstream_request.json (computed), SOURCE.md, and
one answer: upstream.sse + expected.jsonl, upstream.json + expected.json, or upstream_http.json
(status, headers, body) + expected.json."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from app.errors import ProxyError
from app.sse import SSEDecoder

FORMS = (
    {"upstream.sse", "expected.jsonl"},
    {"upstream.json", "expected.json"},
    {"upstream_http.json", "expected.json"},
)


class Cases:
    """The case directories under one root, by the form of their answer."""

    def __init__(self, root: Path) -> None:
        self.all = sorted(path for path in root.iterdir() if path.is_dir())
        self.stream = [case for case in self.all if (case / "upstream.sse").exists()]
        self.json = [case for case in self.all if (case / "upstream.json").exists()]
        self.http = [case for case in self.all if (case / "upstream_http.json").exists()]
        # A `<behaviour>_stream` directory and a `<behaviour>` one hold the same answer.
        self.pairs = [
            (case, case.with_name(case.name.removesuffix("_stream")))
            for case in self.stream
            if case.name.endswith("_stream")
            and case.with_name(case.name.removesuffix("_stream")).is_dir()
        ]


def case_id(case: Path) -> str:
    return case.name


def check(path: Path, actual: Any, update: bool) -> None:
    """Compare with the stored file (as JSON, so formatting is free), or rewrite it."""
    if path.suffix == ".jsonl":
        if update:
            path.write_text("".join(orjson.dumps(line).decode() + "\n" for line in actual))
        expected = [orjson.loads(line) for line in path.read_text().splitlines() if line]
    else:
        if update:
            path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
        expected = orjson.loads(path.read_bytes())
    assert actual == expected


def error_view(error: ProxyError) -> dict[str, Any]:
    """What a client gets for an error answered with an HTTP status."""
    return {"status": error.status, "headers": error.headers, "body": error.body()}


def sse_view(make_stream: Callable[[], Any], pieces: Iterable[bytes]) -> list[dict[str, Any]]:
    """The chunks a client gets for an SSE body read in these pieces. A translator error before
    any chunk is the HTTP error the client gets (status, headers, body); after, the error body
    the relay sends in-band, last."""
    stream = make_stream()
    decoder = SSEDecoder()
    view: list[dict[str, Any]] = []
    try:
        for piece in pieces:
            for event in decoder.feed(piece):
                view.extend(stream.feed(event))
        for event in decoder.flush():
            view.extend(stream.feed(event))
        view.extend(stream.finish())
    except ProxyError as error:
        view.append(error.body() if view else error_view(error))
    return view


def sse_payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON objects of an SSE body's data lines (not `[DONE]`)."""
    events = SSEDecoder().feed(body)
    return [orjson.loads(event.data) for event in events if event.data.startswith("{")]


def failed(view: list[dict[str, Any]]) -> bool:
    return "error" in view[-1] or "status" in view[-1]


def assert_complete(cases: Cases) -> None:
    """Every case holds a request, its computed upstream body, a source, and one answer form."""
    for case in cases.all:
        names = {path.name for path in case.iterdir()}
        assert {"client_request.json", "upstream_request.json", "SOURCE.md"} <= names, case
        assert [form <= names for form in FORMS].count(True) == 1, case
