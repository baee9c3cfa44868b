"""Stored responses, the pure part (app/faces/responses/stored.py), and the store itself
(app/ops/response_store.py): references resolved or refused by position, the input_items
page, and MemoryBlobs' bounds and the store's per-key scoping."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidRequest
from app.faces.responses.stored import (
    history_of,
    input_items_page,
    page_arguments,
    referenced_ids,
    resolved_input,
)
from app.ops.response_store import MemoryBlobs, ResponseStore

pytestmark = pytest.mark.anyio

STORED = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "hi"}],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- references ------------------------------------------------------------------------------


def test_referenced_ids_are_item_references_and_bare_reasoning() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "item_reference", "id": "msg_1"},
        {"id": "fc_2"},  # a reference without its type, as some clients send
        {"type": "reasoning", "id": "rs_3", "summary": []},
        {"type": "reasoning", "id": "rs_4", "encrypted_content": "xyz"},
        {"type": "message", "id": "msg_5", "role": "user", "content": "x"},
        "garbage",
        {"type": "item_reference", "id": 7},
    ]
    assert referenced_ids(items) == ["msg_1", "fc_2", "rs_3"]


def test_resolved_input_replaces_references_in_place() -> None:
    items = [
        {"role": "user", "content": "a"},
        {"type": "item_reference", "id": "msg_1"},
        {"role": "user", "content": "b"},
    ]
    assert resolved_input(items, {"msg_1": STORED}) == [items[0], STORED, items[2]]


def test_an_unknown_reference_is_a_400_naming_its_position() -> None:
    items = [
        {"role": "user", "content": "a"},
        {"type": "item_reference", "id": "msg_1"},
        {"type": "item_reference", "id": "msg_x"},
    ]
    with pytest.raises(InvalidRequest) as caught:
        resolved_input(items, {"msg_1": STORED})
    assert caught.value.param == "input.2"
    assert "msg_x" in str(caught.value)


def test_bare_reasoning_not_found_stays_as_it_is() -> None:
    bare = {"type": "reasoning", "id": "rs_1", "summary": []}
    kept = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
    assert resolved_input([bare], {}) == [bare]
    assert resolved_input([bare], {"rs_1": kept}) == [kept]


def test_history_is_the_input_then_the_output() -> None:
    record = {"input": [{"id": "a"}], "response": {"output": [{"id": "b"}, {"id": "c"}]}}
    assert [item["id"] for item in history_of(record)] == ["a", "b", "c"]


# -- input_items page ------------------------------------------------------------------------

RECORD = {"input": [{"id": f"msg_{n}", "type": "message"} for n in range(5)], "response": {}}


def ids(page: dict[str, Any]) -> list[str]:
    return [item["id"] for item in page["data"]]


def test_desc_first_asc_on_request() -> None:
    page = input_items_page(RECORD, order="desc", limit=20, after=None)
    assert ids(page) == ["msg_4", "msg_3", "msg_2", "msg_1", "msg_0"]
    assert page["object"] == "list"
    assert (page["first_id"], page["last_id"], page["has_more"]) == ("msg_4", "msg_0", False)
    assert ids(input_items_page(RECORD, order="asc", limit=20, after=None))[0] == "msg_0"


def test_limit_and_after_page_through() -> None:
    first = input_items_page(RECORD, order="asc", limit=2, after=None)
    assert ids(first) == ["msg_0", "msg_1"]
    assert first["has_more"] is True
    second = input_items_page(RECORD, order="asc", limit=2, after=first["last_id"])
    assert ids(second) == ["msg_2", "msg_3"]
    assert second["has_more"] is True
    third = input_items_page(RECORD, order="asc", limit=2, after=second["last_id"])
    assert ids(third) == ["msg_4"]
    assert third["has_more"] is False
    desc = input_items_page(RECORD, order="desc", limit=2, after="msg_3")
    assert ids(desc) == ["msg_2", "msg_1"]
    assert desc["has_more"] is True


def test_exactly_limit_left_has_no_more() -> None:
    assert input_items_page(RECORD, order="asc", limit=5, after=None)["has_more"] is False


def test_after_an_unknown_id_is_an_empty_page() -> None:
    page = input_items_page(RECORD, order="asc", limit=2, after="msg_zz")
    assert page == {
        "object": "list",
        "data": [],
        "first_id": None,
        "last_id": None,
        "has_more": False,
    }


def test_page_arguments_defaults_and_bounds() -> None:
    assert page_arguments({}) == ("desc", 20, None)
    assert page_arguments({"order": "asc", "limit": "100", "after": "msg_1"}) == (
        "asc",
        100,
        "msg_1",
    )
    assert page_arguments({"limit": "1"})[1] == 1


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "-3"}, "limit"),
        ({"order": "up"}, "order"),
    ],
)
def test_page_arguments_out_of_bounds_are_400s(query: dict[str, str], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        page_arguments(query)
    assert caught.value.param == param


# -- the store --------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_memory_blobs_expire_after_the_ttl() -> None:
    clock = Clock()
    blobs = MemoryBlobs(ttl=60, clock=clock)
    await blobs.put({"a": b"1"})
    clock.now += 59
    assert await blobs.get(["a"]) == [b"1"]
    clock.now += 1
    assert await blobs.get(["a"]) == [None]
    assert await blobs.delete("a") is False


async def test_memory_blobs_drop_expired_entries_on_put() -> None:
    clock = Clock()
    blobs = MemoryBlobs(ttl=10, clock=clock)
    await blobs.put({"old": b"x" * 10})
    clock.now += 11
    await blobs.put({"new": b"y"})
    assert blobs._size == 1  # the expired entry no longer counts
    assert await blobs.get(["old", "new"]) == [None, b"y"]


async def test_memory_blobs_evict_the_oldest_past_the_byte_bound() -> None:
    blobs = MemoryBlobs(ttl=60, max_bytes=10, clock=Clock())
    await blobs.put({"a": b"1234"})
    await blobs.put({"b": b"5678"})
    await blobs.put({"c": b"90ab"})
    assert await blobs.get(["a", "b", "c"]) == [None, b"5678", b"90ab"]


async def test_memory_blobs_rewriting_a_key_does_not_double_count() -> None:
    blobs = MemoryBlobs(ttl=60, max_bytes=10, clock=Clock())
    for _ in range(5):
        await blobs.put({"a": b"12345678"})
    assert await blobs.get(["a"]) == [b"12345678"]


async def test_memory_blobs_a_single_entry_over_the_bound_is_not_kept() -> None:
    blobs = MemoryBlobs(ttl=60, max_bytes=4, clock=Clock())
    await blobs.put({"small": b"12"})
    await blobs.put({"big": b"123456"})
    assert await blobs.get(["small", "big"]) == [None, None]


def record(response_id: str) -> dict[str, Any]:
    return {"response": {"id": response_id, "output": [STORED]}, "input": []}


async def test_one_scope_cannot_load_delete_or_reference_anothers() -> None:
    store = ResponseStore(MemoryBlobs(ttl=60), prefix="p:")
    await store.save("alice", "resp_1", record("resp_1"), [STORED])
    assert await store.load("bob", "resp_1") is None
    assert await store.items("bob", ["msg_1"]) == {}
    assert await store.delete("bob", "resp_1") is False
    assert await store.load("alice", "resp_1") == record("resp_1")
    assert await store.items("alice", ["msg_1", "msg_x"]) == {"msg_1": STORED}
    assert await store.delete("alice", "resp_1") is True
    assert await store.load("alice", "resp_1") is None
    assert await store.delete("alice", "resp_1") is False


async def test_items_without_a_string_id_are_not_stored_by_id() -> None:
    blobs = MemoryBlobs(ttl=60)
    store = ResponseStore(blobs)
    await store.save("s", "resp_1", record("resp_1"), [{"id": 5}, "x", {"type": "message"}])
    assert list(blobs._entries) == ["responses:s:r:resp_1"]
    assert await store.items("s", []) == {}
