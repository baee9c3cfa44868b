"""GET /health: 200 once the server takes requests (the lifespan has opened the clients)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})
