"""The floor of a Python relay on ToolRelay's stack, for comparing per-chunk CPU against: uvicorn
(uvloop, httptools) and aiohttp, each upstream read written to the client as it came, only the
model's name swapped. No parsing, no checks, no errors handled: a measuring stick, not a proxy.

    python -m bench.floor_relay --port 18170 &
    bench/run --peers toolrelay floor=http://127.0.0.1:18170@$!

It serves POST /v1/chat/completions for the model `bench-openai` against the mock on
--mock-port (bench/RESULTS.md, issue 23: "the floor")."""

from __future__ import annotations

import argparse
from typing import Any

import aiohttp
import uvicorn

from app.__main__ import tune_garbage_collector

Scope = dict[str, Any]


def relay_app(upstream: str) -> Any:
    session: aiohttp.ClientSession | None = None

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        nonlocal session
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if session is None:  # as ToolRelay's: a read limit between reads, none on the whole
            timeout = aiohttp.ClientTimeout(total=None, connect=10, sock_read=60)
            session = aiohttp.ClientSession(timeout=timeout)
        body = body.replace(b'"bench-openai"', b'"mock-model"')
        headers = {"content-type": "application/json", "authorization": "Bearer bench"}
        async with session.post(upstream, data=body, headers=headers) as response:
            content_type = response.headers["content-type"].encode()
            start = {"type": "http.response.start", "status": 200}
            await send({**start, "headers": [(b"content-type", content_type)]})
            while chunk := await response.content.readany():
                chunk = chunk.replace(b'"mock-model"', b'"bench-openai"')
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18170)
    parser.add_argument("--mock-port", type=int, default=18100)
    args = parser.parse_args()
    app = relay_app(f"http://127.0.0.1:{args.mock_port}/v1/chat/completions")
    tune_garbage_collector()  # as `python -m app` does
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
