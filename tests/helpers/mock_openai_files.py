"""A small OpenAI upstream on 127.0.0.1 (aiohttp, in a background thread) for the endpoints
ToolRelay passes through: moderations, audio transcriptions, file upload and download. It
reads multipart bodies as they stream in, hashing each file part as it arrives (so a 100 MB
upload costs it no memory either), and records what every request carried."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

DOWNLOAD_CHUNK = 64 * 1024


def download_bytes(size: int) -> Iterator[bytes]:
    """The content of every download: deterministic, binary (every byte value), `size` long."""
    block = bytes(range(256)) * (DOWNLOAD_CHUNK // 256)
    sent = 0
    while sent < size:
        piece = block[: min(DOWNLOAD_CHUNK, size - sent)]
        sent += len(piece)
        yield piece


@dataclass
class Seen:
    """One request as the upstream got it: form fields as text, files as (size, sha256)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any = None
    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[int, str]] = field(default_factory=dict)


class FilesUpstream:
    """`with FilesUpstream() as upstream:` ... `upstream.seen` lists the requests in order."""

    def __init__(self, download_size: int = 3 * 1024 * 1024 + 17) -> None:
        self.download_size = download_size
        self.seen: list[Seen] = []
        self.slow_closed = threading.Event()
        """Set when a client hung up on GET /v1/slow (a download that never ends on its own)."""
        self.upload_broken = threading.Event()
        """Set when an upload's body stopped before its end (the sender hung up)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FilesUpstream:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/moderations", self._moderations)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{file_id}/content", self._download)
        app.router.add_get("/v1/slow", self._slow)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _record(self, request: web.Request) -> Seen:
        seen = Seen(request.method, request.path, request.query_string, dict(request.headers))
        self.seen.append(seen)
        return seen

    async def _moderations(self, request: web.Request) -> web.Response:
        seen = self._record(request)
        seen.json = await request.json()
        result = {"flagged": False, "categories": {}, "category_scores": {}}
        return web.json_response(
            {"id": "modr-1", "model": seen.json.get("model"), "results": [result]}
        )

    async def _transcriptions(self, request: web.Request) -> web.Response:
        seen = self._record(request)
        await _read_form(request, seen)
        return web.json_response({"text": f"heard {seen.files['file'][0]} bytes"})

    async def _upload(self, request: web.Request) -> web.Response:
        seen = self._record(request)
        try:
            await _read_form(request, seen)
        except BaseException:
            self.upload_broken.set()
            raise
        size, _ = seen.files["file"]
        return web.json_response(
            {
                "id": "file-abc",
                "object": "file",
                "bytes": size,
                "created_at": 0,
                "filename": "upload.jsonl",
                "purpose": seen.fields.get("purpose", ""),
                "status": "processed",
            }
        )

    async def _download(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(
            headers={
                "content-type": "application/octet-stream",
                "content-length": str(self.download_size),
            }
        )
        await response.prepare(request)
        for piece in download_bytes(self.download_size):
            await response.write(piece)
        await response.write_eof()
        return response

    async def _slow(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        response = web.StreamResponse(headers={"content-type": "application/octet-stream"})
        await response.prepare(request)
        try:
            for _ in range(600):
                await response.write(b"x" * 1024)
                await asyncio.sleep(0.05)
        except BaseException:
            self.slow_closed.set()
            raise
        return response


async def _read_form(request: web.Request, seen: Seen) -> None:
    """Each part as it streams: a file hashed chunk by chunk, a field kept as text."""
    reader = await request.multipart()
    async for part in reader:
        assert isinstance(part, BodyPartReader)
        name = part.name or ""
        if part.filename is None:
            seen.fields[name] = (await part.read()).decode()
            continue
        digest, size = hashlib.sha256(), 0
        while chunk := await part.read_chunk(256 * 1024):
            digest.update(chunk)
            size += len(chunk)
        seen.files[name] = (size, digest.hexdigest())
