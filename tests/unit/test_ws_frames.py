"""app/api/ws_frames.py: the text frames built by hand are byte for byte the `websockets`
library's own (every length encoding), and under a server other than uvicorn's sans-I/O
protocol each frame goes as one ASGI `websocket.send`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from websockets.frames import OP_TEXT, Frame

from app.api.ws_frames import FrameWriter, text_frame


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_text_frame_is_the_librarys_frame(size: int) -> None:
    payload = ("é" * size).encode()[:size]
    assert text_frame(payload) == Frame(OP_TEXT, payload).serialize(mask=False, extensions=[])


def test_any_other_server_gets_one_websocket_send_a_frame() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    assert asyncio.run(FrameWriter(send).write([b'{"a":1}', b'{"b":2}']))
    assert sent == [
        {"type": "websocket.send", "text": '{"a":1}'},
        {"type": "websocket.send", "text": '{"b":2}'},
    ]


def test_a_closed_socket_is_reported() -> None:
    async def send(message: dict[str, Any]) -> None:
        raise OSError("closed")

    assert asyncio.run(FrameWriter(send).write([b"{}"])) is False
