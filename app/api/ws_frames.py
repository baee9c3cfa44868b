"""Text frames onto an accepted WebSocket, a stream chunk's events at a time.

Over HTTP a chunk of the Responses stream is one write however many events it holds; on a
WebSocket each event is its own frame, and ASGI's `websocket.send` is one frame and one socket
write, which made the socket cost ~1.2-1.5x the HTTP stream's CPU per event (bench/websocket.py).
Under uvicorn's websockets-sansio protocol (what `python -m app` serves WebSockets with: uvicorn's
`ws="auto"` with `websockets` installed) the frames of one chunk are framed by the protocol's own
sans-I/O connection and written together, with the same flow control and closed-socket checks as
its `send` (the frames built here when no extension is negotiated, as `python -m app` serves:
see `text_frame`); any other server gets one `websocket.send` a frame."""

from __future__ import annotations

from typing import Any

from starlette.types import Send

try:
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    from websockets.protocol import State
except ImportError:  # pragma: no cover - uvicorn[standard] brings both
    WebSocketsSansIOProtocol = None  # type: ignore[assignment,misc]


class FrameWriter:
    """`write(frames)`: each UTF-8 payload as one text frame, in order; False once the socket is
    closed (nothing more can be written)."""

    __slots__ = ("_protocol", "_send")

    def __init__(self, send: Send) -> None:
        self._send = send
        protocol = getattr(send, "__self__", None)
        usable = WebSocketsSansIOProtocol is not None and isinstance(
            protocol, WebSocketsSansIOProtocol
        )
        self._protocol: Any = protocol if usable else None

    async def write(self, frames: list[bytes]) -> bool:
        if self._protocol is None:
            return await self._one_by_one(frames)
        protocol = self._protocol
        if not protocol.writable.is_set():  # the transport's flow control, as its send() waits
            await protocol.writable.wait()
        if protocol.disconnected or protocol.close_sent:
            return False
        connection = protocol.conn
        if connection.state is not State.OPEN:
            return False
        if connection.extensions:  # permessage-deflate: the library compresses each frame
            for frame in frames:
                connection.send_text(frame)
            protocol.transport.write(b"".join(connection.data_to_send()))
        else:
            protocol.transport.write(b"".join([text_frame(frame) for frame in frames]))
        return True

    async def _one_by_one(self, frames: list[bytes]) -> bool:
        try:
            for frame in frames:
                await self._send({"type": "websocket.send", "text": frame.decode()})
        except (OSError, RuntimeError):  # the socket closed under us
            return False
        return True


def text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked text frame (RFC 6455 section 5.2: a server never masks), the
    bytes the `websockets` library writes for it when no extension is negotiated; built here
    because the library's per-frame objects cost as much as the rest of an event's relay."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big") + payload
    return b"\x81\x7f" + size.to_bytes(8, "big") + payload
