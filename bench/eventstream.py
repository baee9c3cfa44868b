"""What decoding Bedrock's binary event stream costs per frame, in-process: a ~200-byte
`contentBlockDelta` frame (a tool call's argument fragment, with AWS's `p` padding) through
`EventStreamDecoder`, one frame per read (as a streamed answer mostly arrives), many frames in
one read, and each frame split over two reads; beside it the SSE decoder on the same payload
as an SSE event, the framing the other kinds' streams pay for.

Run: python -m bench.eventstream"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson

from app.sse import SSEDecoder, data_frame
from app.translators.bedrock.eventstream import EventStreamDecoder
from tests.helpers.bedrock_eventstream import event_frame

FRAMES = 2000
REPEATS = 15
PAYLOAD = orjson.dumps(
    {
        "contentBlockIndex": 1,
        "delta": {"toolUse": {"input": '{"city": "Paris", "units": "m'}},
        "p": "abcdefghijklmn",
    }
)
FRAME = event_frame("contentBlockDelta", PAYLOAD)


def one_per_read() -> None:
    decoder = EventStreamDecoder()
    feed = decoder.feed
    for _ in range(FRAMES):
        feed(FRAME)
    decoder.flush()


MANY = FRAME * 50


def fifty_per_read() -> None:
    decoder = EventStreamDecoder()
    for _ in range(FRAMES // 50):
        decoder.feed(MANY)
    decoder.flush()


HEAD, TAIL = FRAME[:80], FRAME[80:]


def split_in_two() -> None:
    decoder = EventStreamDecoder()
    feed = decoder.feed
    for _ in range(FRAMES):
        feed(HEAD)
        feed(TAIL)
    decoder.flush()


SSE_EVENT = b"event: contentBlockDelta\n" + data_frame(PAYLOAD)


def sse_one_per_read() -> None:
    decoder = SSEDecoder()
    feed = decoder.feed
    for _ in range(FRAMES):
        feed(SSE_EVENT)
    decoder.flush()


def best_us_per_frame(run: Callable[[], None]) -> float:
    """Microseconds per frame, the best of REPEATS runs (the least disturbed)."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best / FRAMES * 1e6


def main() -> None:
    print(f"frame: {len(FRAME)} bytes (payload {len(PAYLOAD)})")  # noqa: T201
    for name, run in [
        ("eventstream, one frame per read", one_per_read),
        ("eventstream, 50 frames per read", fifty_per_read),
        ("eventstream, each frame over two reads", split_in_two),
        ("SSE decoder, same payload, one event per read", sse_one_per_read),
    ]:
        print(f"{name}: {best_us_per_frame(run):.2f} us per frame")  # noqa: T201


if __name__ == "__main__":
    main()
