"""A stored stream's events read the same whether the bytes are the proxy's own one-line
frames (the fast path) or any other SSE framing (the full decoder)."""

from __future__ import annotations

from app.console.assemble import assemble, events

CHUNKS = [
    b'{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}',
    b'{"id":"c","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}',
]


def test_one_line_frames_and_other_framings_read_alike() -> None:
    own = b"".join(b"data: " + chunk + b"\n\n" for chunk in CHUNKS) + b"data: [DONE]\n\n"
    split = b"".join(
        b"data:" + chunk[:10] + b"\r\ndata:" + chunk[10:] + b"\r\n\r\n" for chunk in CHUNKS
    )
    named = b"".join(b"event: x\ndata: " + chunk + b"\n\n" for chunk in CHUNKS)
    assert events(own) == events(split) == events(named)
    assert len(events(own)) == 2
    answer = assemble("chat", own)
    assert answer is not None
    assert answer["choices"][0]["message"]["content"] == "Hello"
    assert answer["choices"][0]["finish_reason"] == "stop"
