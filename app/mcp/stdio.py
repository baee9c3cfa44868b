"""stdio servers: one process per label, started when first needed, restarted when it has
died (the next use starts a fresh one), stopped by `aclose`. One SDK `Client` per process,
shared by every call (JSON-RPC multiplexes them), held open by a task of its own because an
SDK client must be entered and left in the same task."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

Incoming = SessionMessage | Exception


@asynccontextmanager
async def watched_stdio(
    params: StdioServerParameters, ended: anyio.Event
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Incoming], object]]:
    """The SDK's stdio transport with its read side relayed, so the end of the process's
    output (it died, or closed stdout) sets `ended` the moment it happens."""
    relay_send, relay_receive = anyio.create_memory_object_stream[Incoming](0)
    async with stdio_client(params) as (process_read, process_write):

        async def relay() -> None:
            try:
                async with relay_send:
                    async for message in process_read:
                        await relay_send.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                ended.set()

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(relay)
            try:
                yield relay_receive, process_write
            finally:
                task_group.cancel_scope.cancel()


class StdioProcess:
    """One configured stdio server's process and its connected client."""

    def __init__(self, params: StdioServerParameters, timeout: float) -> None:
        self._params = params
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._client: Client | None = None
        self._ended = anyio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def command(self) -> str:
        """The program started (named when it cannot be found)."""
        return self._params.command

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._ended.is_set()

    async def client(self) -> Client:
        """The running process's client; a fresh process when there is none or it died.
        Concurrent first uses wait on one start, so they start ONE process."""
        async with self._lock:
            if not self.alive:
                await self._stop_process()
                await self._start()
            assert self._client is not None
            return self._client

    def discard(self) -> None:
        """Forget a process that failed under a call: the next use starts a fresh one."""
        self._ended.set()

    async def _start(self) -> None:
        self._ended, self._stop = anyio.Event(), asyncio.Event()
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready))
        try:
            async with asyncio.timeout(self._timeout):
                self._client = await asyncio.shield(ready)
        except BaseException:
            await self._stop_process()
            raise

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        """Keep the client entered until stopped; any failure to start goes to `ready`."""
        try:
            transport = watched_stdio(self._params, self._ended)
            async with Client(transport, mode="auto", cache=None) as client:  # type: ignore[arg-type]
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error if isinstance(error, Exception) else RuntimeError())
            if not isinstance(error, Exception):
                raise
        finally:
            self._ended.set()

    async def _stop_process(self) -> None:
        task, self._task, self._client = self._task, None, None
        if task is None:
            return
        self._stop.set()
        try:
            async with asyncio.timeout(self._timeout):
                await task
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def aclose(self) -> None:
        async with self._lock:
            await self._stop_process()
