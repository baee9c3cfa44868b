"""A Bedrock stream through the relay (its own framing): an exception frame is the status it
names while nothing has gone out to the client, even when a chunk was already made from the
same read, and the one error event once something has."""

from __future__ import annotations

import json

import orjson
import pytest

from app.errors import ProxyError
from app.openai_types import parse_chat_request
from app.relay.streaming import StreamOptions, open_stream
from app.translators import TRANSLATORS
from app.translators.base import ResponseContext, UpstreamRequest
from tests.helpers.bedrock_eventstream import event_frame, exception_frame
from tests.unit.test_relay_pass_through import Client

pytestmark = pytest.mark.anyio

REQUEST = parse_chat_request(
    orjson.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
)
START = event_frame("messageStart", json.dumps({"role": "assistant"}).encode())
TEXT = event_frame(
    "contentBlockDelta",
    json.dumps({"contentBlockIndex": 0, "delta": {"text": "Let me"}}).encode(),
)
THROTTLED = exception_frame("throttlingException", "Too many requests")


async def relayed(reads: list[bytes]) -> bytes:
    ctx = ResponseContext("chatcmpl-b", 1, "m", REQUEST)
    upstream = UpstreamRequest("http://bedrock.test/model/m/converse-stream", {}, b"", True)
    frames = await open_stream(
        Client(reads), upstream, TRANSLATORS["bedrock"], ctx, StreamOptions("aws", str)
    )
    return b"".join([frame async for frame in frames])


async def test_an_exception_in_the_first_read_is_its_status_though_a_chunk_was_made() -> None:
    with pytest.raises(ProxyError) as caught:
        await relayed([START + TEXT + THROTTLED])
    assert (caught.value.status, caught.value.retryable) == (429, True)


async def test_an_exception_after_the_first_frames_went_out_is_the_error_event() -> None:
    sent = await relayed([START + TEXT, THROTTLED])
    assert b"Let me" in sent
    last = orjson.loads(sent.split(b"\n\n")[-2].removeprefix(b"data: "))
    assert last["error"]["message"] == "Too many requests"
    assert b"[DONE]" not in sent
