"""The production upstream client (aiohttp, no httpx layer) against real servers on 127.0.0.1:
bodies whole and read by read, the status and headers, every network failure as the 502 or
504 ProxyError the relay expects, a half-read answer closing its connection, a whole one
returning it to the pool, and no cookie kept between requests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from app.errors import ProxyError
from app.relay.aiohttp_client import AiohttpClient
from app.relay.upstream_types import ReadLimits
from app.translators.base import UpstreamRequest
from tests.helpers.mock_upstream import OPENAI_PATH, Frame, MockUpstream, Reply

LIMITS = ReadLimits(connect=2.0, read=2.0)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client() -> AsyncIterator[AiohttpClient]:
    client = AiohttpClient("oa")
    yield client
    await client.aclose()


def request(base_url: str, *, stream: bool = False, path: str = OPENAI_PATH) -> UpstreamRequest:
    return UpstreamRequest(
        f"{base_url}{path}",
        {"authorization": "Bearer sk-test", "content-type": "application/json"},
        b'{"model": "m"}',
        stream,
    )


async def test_a_whole_answer_with_its_status_and_headers(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    mock_upstream.add(Reply(429, json={"error": "slow"}, headers={"Retry-After": "3"}))
    answer = await client.open(request(mock_upstream.base_url), LIMITS)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "3"  # case-insensitive
    assert await answer.read() == b'{"error": "slow"}'
    await answer.close()
    (exchange,) = mock_upstream.exchanges
    assert exchange.body == {"model": "m"}
    assert exchange.headers["authorization"] == "Bearer sk-test"


async def test_a_stream_read_by_read_until_it_ends(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    frames = [Frame({"n": n}, delay=0.01) for n in range(5)]
    mock_upstream.add(Reply(frames=frames))
    answer = await client.open(request(mock_upstream.base_url, stream=True), LIMITS)
    reads = []
    while piece := await answer.read_some():
        reads.append(piece)
    await answer.close()
    assert b"".join(reads) == b"".join(frame.encode() for frame in frames)
    assert len(reads) >= 2  # paced frames arrive as separate reads


async def test_nobody_listening_is_a_502(client: AiohttpClient) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(ProxyError) as caught:
        await client.open(request(f"http://127.0.0.1:{port}"), LIMITS)
    assert caught.value.status == 502
    assert (
        f"'oa' could not be reached (127.0.0.1:{port}, connection failed)" in caught.value.message
    )


async def test_no_headers_within_the_read_limit_is_a_504(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    mock_upstream.add(Reply(json={}, delay=1.0))
    with pytest.raises(ProxyError) as caught:
        await client.open(request(mock_upstream.base_url), ReadLimits(2.0, 0.2))
    assert caught.value.status == 504


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (Reply(frames=[Frame({"n": 1})] * 3, hang_after=1), 504),  # a stall past the read limit
        (Reply(frames=[Frame({"n": 1})] * 3, drop_after=1), 502),  # a stream cut short
    ],
    ids=["stall", "cut"],
)
async def test_a_stream_that_stops_midway_fails_as_a_proxy_error(
    client: AiohttpClient, mock_upstream: MockUpstream, reply: Reply, status: int
) -> None:
    mock_upstream.add(reply)
    answer = await client.open(request(mock_upstream.base_url, stream=True), ReadLimits(2, 0.2))
    assert await answer.read_some() == Frame({"n": 1}).encode()
    with pytest.raises(ProxyError) as caught:
        await answer.read_some()
    await answer.close()
    assert caught.value.status == status


async def test_a_reset_connection_is_a_502(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    mock_upstream.add(Reply(reset=True))
    with pytest.raises(ProxyError) as caught:
        await client.open(request(mock_upstream.base_url), LIMITS)
    assert caught.value.status == 502


async def test_closing_a_half_read_stream_hangs_up_on_the_upstream(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    frames = [Frame({"n": n}, delay=0.05) for n in range(40)]
    mock_upstream.add(Reply(frames=frames))
    answer = await client.open(request(mock_upstream.base_url, stream=True), LIMITS)
    assert await answer.read_some()
    await answer.close()
    (exchange,) = mock_upstream.exchanges
    assert await asyncio.to_thread(exchange.closed.wait, 2)


class KeepAliveServer:
    """An aiohttp server that keeps connections open: counts the connections and the
    cookies it was sent, sets one on every answer, and streams when asked."""

    def __init__(self) -> None:
        self.peers: set[object] = set()
        self.cookies: list[str] = []

    async def handle(self, incoming: web.Request) -> web.StreamResponse:
        self.peers.add(incoming.transport.get_extra_info("peername") if incoming.transport else 0)
        self.cookies.append(incoming.headers.get("cookie", ""))
        if incoming.query.get("stream"):
            response = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await response.prepare(incoming)
            for n in range(3):
                await response.write(b"data: %d\n\n" % n)
            await response.write_eof()
            return response
        answer = web.json_response({"ok": True})
        answer.set_cookie("session", "upstream-secret")
        return answer


@pytest.fixture
async def keep_alive() -> AsyncIterator[tuple[str, KeepAliveServer]]:
    server = KeepAliveServer()
    app = web.Application()
    app.router.add_post(OPENAI_PATH, server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", server
    await runner.cleanup()


async def test_whole_answers_reuse_one_connection_and_keep_no_cookie(
    client: AiohttpClient, keep_alive: tuple[str, KeepAliveServer]
) -> None:
    base_url, server = keep_alive
    for path in (OPENAI_PATH, OPENAI_PATH, f"{OPENAI_PATH}?stream=1", OPENAI_PATH):
        answer = await client.open(request(base_url, path=path), LIMITS)
        assert answer.status_code == 200
        if "stream" in path:
            while await answer.read_some():
                pass
        else:
            assert await answer.read() == b'{"ok": true}'
        await answer.close()
    assert len(server.peers) == 1
    assert server.cookies == ["", "", "", ""]


async def test_a_path_goes_out_exactly_as_built(
    client: AiohttpClient, mock_upstream: MockUpstream
) -> None:
    """A percent-encoded segment stays encoded on the wire (Bedrock's model ids: SigV4 signs
    the path as built, and `%3A` decoded to `:` would no longer match the signature)."""
    path = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    arn = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fp/converse"
    for sent in (path, arn):
        mock_upstream.add(Reply(json={}), sent)
        answer = await client.open(request(mock_upstream.base_url, path=sent), LIMITS)
        await answer.read()
        await answer.close()
    assert [exchange.path for exchange in mock_upstream.exchanges] == [path, arn]
