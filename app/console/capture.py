"""What the request path hands the console: which API a request spoke, and (with `bodies:
full`) the bytes the client sent and received, appended as they pass. Nothing is parsed or
copied here; the log's writer does that, off the request path."""

from __future__ import annotations

from starlette.types import Message, Receive

ROW_APIS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/v1/embeddings": "embeddings",
}
"""The paths (POST) whose requests get a row, and the row's `api`."""

CONSOLE_PATHS = ("/v1/logs", "/v1/keys")
"""Admin APIs: they take admin keys, not client keys."""


def is_console_path(path: str) -> bool:
    return path.startswith(CONSOLE_PATHS) and (
        len(path) == 8 or path[8] == "/" or path in CONSOLE_PATHS
    )


class Capture:
    __slots__ = ("api", "request", "response")

    def __init__(self, api: str, bodies: bool) -> None:
        self.api = api
        self.request: list[bytes] | None = [] if bodies else None
        self.response: list[bytes] | None = [] if bodies else None

    def receiving(self, receive: Receive) -> Receive:
        """`receive`, keeping each body chunk the client sent."""
        kept = self.request
        if kept is None:
            return receive

        async def keeping() -> Message:
            message = await receive()
            body = message.get("body")
            if body:
                kept.append(body)
            return message

        return keeping
