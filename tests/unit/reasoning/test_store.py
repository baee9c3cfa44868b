"""The in-memory thinking store: found by any of an answer's call ids, gone after its ttl,
bounded in bytes (oldest dropped first), and never handing out an object a caller can change
under it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import orjson

from app.reasoning.store import MemoryThinkingStore

BLOCKS = [{"type": "thinking", "thinking": "Weigh it.", "signature": "c2ln"}]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


def test_blocks_are_found_by_any_call_id_of_their_answer() -> None:
    store = MemoryThinkingStore()
    run(store.save(["call_a", "call_b"], BLOCKS))
    assert run(store.load(["call_b"])) == BLOCKS
    assert run(store.load(["unknown", "call_a"])) == BLOCKS
    assert run(store.load(["unknown"])) is None


def test_what_comes_back_is_a_copy() -> None:
    store = MemoryThinkingStore()
    saved = [dict(block) for block in BLOCKS]
    run(store.save(["call_a"], saved))
    saved[0]["thinking"] = "changed by the caller"
    loaded = run(store.load(["call_a"]))
    loaded[0]["thinking"] = "changed by a reader"
    assert run(store.load(["call_a"])) == BLOCKS


def test_blocks_expire_after_the_ttl() -> None:
    clock = Clock()
    store = MemoryThinkingStore(ttl=3600, clock=clock)
    run(store.save(["call_a"], BLOCKS))
    clock.now += 3599
    assert run(store.load(["call_a"])) == BLOCKS
    clock.now += 2
    assert run(store.load(["call_a"])) is None


def test_expired_entries_are_dropped_when_new_ones_arrive() -> None:
    clock = Clock()
    store = MemoryThinkingStore(ttl=10, clock=clock)
    run(store.save(["old"], BLOCKS))
    clock.now += 11
    run(store.save(["new"], BLOCKS))
    assert store._blobs.keys() == ["new"]


def test_the_store_is_bounded_in_bytes_dropping_the_oldest() -> None:
    size = len(orjson.dumps(BLOCKS))
    store = MemoryThinkingStore(max_bytes=size * 3)
    for number in range(5):
        run(store.save([f"call_{number}"], BLOCKS))
    assert [run(store.load([f"call_{n}"])) is not None for n in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_saving_an_id_again_replaces_it_without_counting_it_twice() -> None:
    size = len(orjson.dumps(BLOCKS))
    store = MemoryThinkingStore(max_bytes=size)
    run(store.save(["call_a"], BLOCKS))
    run(store.save(["call_a"], BLOCKS))
    assert run(store.load(["call_a"])) == BLOCKS
