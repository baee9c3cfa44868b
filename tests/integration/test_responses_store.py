"""Stored responses through the in-process app (CONTRACT.md, "OpenAI Responses API": stored
responses): scoped to the client key that made them (a named key, each `api_keys` entry on
its own), chained by `previous_response_id`, referenced item by item (`item_reference`, as
the Vercel AI SDK sends earlier output), not kept with `store: false`, gone after DELETE or
the ttl, and shared by replicas on one Redis."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import openai
import pytest

from app.ops import setup
from app.ops.response_store import MemoryBlobs
from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import CALLS, USAGE, openai_tool_completion
from tests.integration.conftest import CLIENT_KEY, PROVIDER_KEY, assert_error, make_config, serve

pytestmark = pytest.mark.anyio

ALICE_KEY = "alice-key-SECRET-111"
OTHER_KEY = "other-api-key-SECRET-333"
KEYS = (ALICE_KEY, CLIENT_KEY, OTHER_KEY)
_ids = itertools.count(1)


def store_config(upstream: MockUpstream | None = None, **server: Any) -> dict[str, Any]:
    """A named key (alice) and two `api_keys` entries; `demo`, and `mini` on the mock."""
    base = upstream.base_url if upstream is not None else "http://unused.test"
    return {
        "server": {
            "keys": [{"name": "alice", "key": ALICE_KEY}],
            "api_keys": [CLIENT_KEY, OTHER_KEY],
            **server,
        },
        "router": {"retries": 0},
        "providers": {
            "oa": {"kind": "openai", "base_url": f"{base}/v1", "api_key": PROVIDER_KEY},
            "demo": {"kind": "demo"},
        },
        "models": [
            {"name": "mini", "provider": "oa", "model": "gpt-4o-mini"},
            {"name": "demo", "provider": "demo", "model": "demo"},
        ],
    }


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def text_completion(text: str) -> dict[str, Any]:
    """A non-stream chat answer with an id of its own (ids become response ids)."""
    return {
        "id": f"chatcmpl-store-{next(_ids)}",
        "object": "chat.completion",
        "created": 1727346178,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": USAGE,
    }


def tool_completion() -> dict[str, Any]:
    return {**openai_tool_completion(), "id": f"chatcmpl-store-{next(_ids)}"}


def tool_chunks() -> list[dict[str, Any]]:
    completion_id = f"chatcmpl-store-{next(_ids)}"
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
    }
    call_id, name, arguments = CALLS[0]
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return [
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "tool_calls": [call]},
                    "finish_reason": None,
                }
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**base, "choices": [], "usage": USAGE},
    ]


@pytest.fixture
async def proxy(anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(make_config(store_config()), client_key=None) as client:
        yield client


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


async def create(client: httpx.AsyncClient, key: str = CLIENT_KEY, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/responses", json={"model": "demo", **body}, headers=auth(key))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def sent_messages(upstream: MockUpstream, index: int = -1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = upstream.requests(OPENAI_PATH)[index].body["messages"]
    return messages


def not_found_error(previous: str) -> dict[str, Any]:
    return {
        "error": {
            "message": f"Previous response with id '{previous}' not found.",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        }
    }


async def assert_gone(client: httpx.AsyncClient, response_id: str, key: str) -> None:
    """Every way of reaching a response answers as if it never existed."""
    for method, path in (
        ("GET", f"/v1/responses/{response_id}"),
        ("GET", f"/v1/responses/{response_id}/input_items"),
        ("DELETE", f"/v1/responses/{response_id}"),
    ):
        answer = await client.request(method, path, headers=auth(key))
        error = assert_error(answer, 404)
        assert response_id in error["message"], (method, path, error)
    chained = await client.post(
        "/v1/responses",
        json={"model": "demo", "input": "more", "previous_response_id": response_id},
        headers=auth(key),
    )
    assert chained.status_code == 400, chained.text
    assert chained.json() == not_found_error(response_id)


@pytest.mark.parametrize("owner", KEYS)
async def test_a_stored_response_is_its_keys_alone(proxy: httpx.AsyncClient, owner: str) -> None:
    made = await create(proxy, owner, input=f"a secret of {owner[:5]}")
    for other in KEYS:
        if other != owner:
            await assert_gone(proxy, made["id"], other)
    got = await proxy.get(f"/v1/responses/{made['id']}", headers=auth(owner))
    assert got.status_code == 200
    assert got.json() == made
    chained = await create(proxy, owner, input="and then?", previous_response_id=made["id"])
    assert chained["previous_response_id"] == made["id"]


async def test_the_sdk_sees_another_keys_response_as_not_found(proxy: httpx.AsyncClient) -> None:
    def sdk(key: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=key, base_url="http://toolrelay.test/v1", http_client=proxy, max_retries=0
        )

    made = await sdk(ALICE_KEY).responses.create(model="demo", input="hello from alice")
    assert (await sdk(ALICE_KEY).responses.retrieve(made.id)).output_text == made.output_text
    with pytest.raises(openai.NotFoundError):
        await sdk(OTHER_KEY).responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        await sdk(OTHER_KEY).responses.delete(made.id)
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk(OTHER_KEY).responses.create(model="demo", input="x", previous_response_id=made.id)
    assert caught.value.code == "previous_response_not_found"
    items = await sdk(ALICE_KEY).responses.input_items.list(made.id)
    assert [item.type for item in items.data] == ["message"]
    await sdk(ALICE_KEY).responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await sdk(ALICE_KEY).responses.retrieve(made.id)


async def test_an_unknown_previous_response_is_exactly_openais_400(
    proxy: httpx.AsyncClient,
) -> None:
    for model in ("demo", "mini"):
        answer = await proxy.post(
            "/v1/responses",
            json={"model": model, "input": "hi", "previous_response_id": "resp_x"},
            headers=auth(CLIENT_KEY),
        )
        assert answer.status_code == 400
        assert answer.json() == not_found_error("resp_x")
        streamed = await proxy.post(
            "/v1/responses",
            json={"model": model, "input": "hi", "previous_response_id": "resp_x", "stream": True},
            headers=auth(CLIENT_KEY),
        )
        assert streamed.status_code == 400
        assert streamed.json() == not_found_error("resp_x")


async def test_store_false_is_not_kept(proxy: httpx.AsyncClient) -> None:
    made = await create(proxy, input="not to be kept", store=False)
    assert made["store"] is False
    await assert_gone(proxy, made["id"], CLIENT_KEY)


async def test_delete_then_get_is_404(proxy: httpx.AsyncClient) -> None:
    made = await create(proxy, input="to be deleted")
    deleted = await proxy.delete(f"/v1/responses/{made['id']}", headers=auth(CLIENT_KEY))
    assert deleted.status_code == 200
    assert deleted.json() == {"id": made["id"], "object": "response", "deleted": True}
    await assert_gone(proxy, made["id"], CLIENT_KEY)


async def test_a_response_expires_after_the_ttl(
    monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    now = [5000.0]
    kept: list[MemoryBlobs] = []

    def blobs(ttl: float, max_bytes: int) -> MemoryBlobs:
        kept.append(MemoryBlobs(ttl, max_bytes, clock=lambda: now[0]))
        return kept[-1]

    monkeypatch.setattr(setup, "MemoryBlobs", blobs)
    raw = store_config(responses={"ttl": 120})
    async with serve(make_config(raw), client_key=CLIENT_KEY) as client:
        assert kept
        assert kept[0]._ttl == 120
        made = await create(client, input="short-lived")
        now[0] += 119
        assert (await client.get(f"/v1/responses/{made['id']}")).status_code == 200
        chained = await create(client, input="still here", previous_response_id=made["id"])
        now[0] += 1
        await assert_gone(client, made["id"], CLIENT_KEY)
        # The chained one was written later, so it outlives the first, and carries its history.
        assert (await client.get(f"/v1/responses/{chained['id']}")).status_code == 200
        await create(client, input="after the first expired", previous_response_id=chained["id"])


async def test_a_chain_of_three_carries_the_whole_conversation(upstream: MockUpstream) -> None:
    for text in ("one", "two", "three"):
        upstream.add(Reply(json=text_completion(text)))
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        first = await create(client, model="mini", instructions="Be brief.", input="first")
        second = await create(
            client, model="mini", input="second", previous_response_id=first["id"]
        )
        third = await create(
            client,
            model="mini",
            instructions="Be kind.",
            input="third",
            previous_response_id=second["id"],
        )
        assert third["output"][0]["content"][0]["text"] == "three"
        items = await client.get(
            f"/v1/responses/{third['id']}/input_items", params={"order": "asc"}
        )
    assert sent_messages(upstream) == [
        {"role": "system", "content": "Be kind."},  # instructions are not carried over
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "third"},
    ]
    listed = items.json()
    assert [item["type"] for item in listed["data"]] == ["message"] * 5
    assert all(item["id"] for item in listed["data"])
    assert listed["data"][-1]["content"] == [{"type": "input_text", "text": "third"}]


async def test_an_item_reference_brings_back_the_stored_call(upstream: MockUpstream) -> None:
    """The AI SDK sends earlier output as `{type: "item_reference", id}` with the outputs."""
    upstream.add(Reply(json=tool_completion()))
    upstream.add(Reply(json=text_completion("Sunny in Paris, night in Tokyo.")))
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        first = await create(client, model="mini", input="Weather in Paris, time in Tokyo?")
        calls = [item for item in first["output"] if item["type"] == "function_call"]
        assert len(calls) == 2
        following = [{"role": "user", "content": "Weather in Paris, time in Tokyo?"}]
        following += [{"type": "item_reference", "id": call["id"]} for call in calls]
        following += [
            {"type": "function_call_output", "call_id": call["call_id"], "output": f"result {n}"}
            for n, call in enumerate(calls)
        ]
        await create(client, model="mini", input=following)
        unknown = await client.post(
            "/v1/responses",
            json={
                "model": "mini",
                "input": [following[0], {"type": "item_reference", "id": "fc_nope"}],
            },
        )
        other = await client.post(
            "/v1/responses", json={"model": "mini", "input": following}, headers=auth(OTHER_KEY)
        )
    sent = sent_messages(upstream)
    assert sent[1]["role"] == "assistant"
    assert [call["id"] for call in sent[1]["tool_calls"]] == [call_id for call_id, _, _ in CALLS]
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [
        (CALLS[0][0], "result 0"),
        (CALLS[1][0], "result 1"),
    ]
    error = assert_error(unknown, 400)
    assert error["param"] == "input.1"
    assert "fc_nope" in error["message"]
    assert assert_error(other, 400)["param"] == "input.1"  # another key's items are not its own
    assert len(upstream.requests(OPENAI_PATH)) == 2


async def test_every_reference_works_a_second_and_a_third_time(upstream: MockUpstream) -> None:
    """The AI SDK sends the whole conversation each turn, earlier output as references: a
    reference that was resolved once is stored as what it resolved to, so turn 3 (and a retry,
    and a chain through a response whose request used one) finds the item, not a placeholder."""
    upstream.add(Reply(json=tool_completion()))
    for text in ("Sunny in Paris.", "Bye.", "Bye again.", "chained"):
        upstream.add(Reply(json=text_completion(text)))
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        first = await create(client, model="mini", input="Weather in Paris, time in Tokyo?")
        calls = [item for item in first["output"] if item["type"] == "function_call"]
        conversation: list[dict[str, Any]] = [
            {"role": "user", "content": "Weather in Paris, time in Tokyo?"},
            *({"type": "item_reference", "id": call["id"]} for call in calls),
            *(
                {"type": "function_call_output", "call_id": call["call_id"], "output": f"r{n}"}
                for n, call in enumerate(calls)
            ),
        ]
        second = await create(client, model="mini", input=conversation)
        conversation += [{"type": "item_reference", "id": second["output"][0]["id"]}]
        conversation += [{"role": "user", "content": "And now?"}]
        third = await create(client, model="mini", input=conversation)
        retried = await create(client, model="mini", input=conversation)
        chained = await create(client, model="mini", input="more", previous_response_id=third["id"])
        listed = (await client.get(f"/v1/responses/{third['id']}/input_items?order=asc")).json()
    assert chained["status"] == retried["status"] == "completed"
    whole_third = [
        ("user", None),
        ("assistant", [call_id for call_id, _, _ in CALLS]),
        ("tool", None),
        ("tool", None),
        ("assistant", None),
        ("user", None),
    ]
    for index in (2, 3):  # the third turn and its retry
        sent = sent_messages(upstream, index)
        assert [(m["role"], _call_ids(m)) for m in sent] == whole_third
        assert sent[4]["content"] == "Sunny in Paris."
    chained_sent = sent_messages(upstream, 4)
    assert [(m["role"], _call_ids(m)) for m in chained_sent] == [
        *whole_third,
        ("assistant", None),
        ("user", None),
    ]
    assert all(item["type"] != "item_reference" for item in listed["data"])
    assert [item["type"] for item in listed["data"]] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
        "message",
    ]
    assert third["output"][0]["content"][0]["text"] == "Bye."


def _call_ids(message: dict[str, Any]) -> list[str] | None:
    calls = message.get("tool_calls")
    return [call["id"] for call in calls] if calls else None


async def test_an_item_id_as_first_streamed_is_the_one_stored(upstream: MockUpstream) -> None:
    upstream.add(Reply(frames=openai_frames(tool_chunks())))
    upstream.add(Reply(json=text_completion("done")))
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        body = {"model": "mini", "input": "weather?", "stream": True}
        async with client.stream("POST", "/v1/responses", json=body) as answer:
            assert answer.status_code == 200
            events = [
                json.loads(line.removeprefix("data: "))
                async for line in answer.aiter_lines()
                if line.startswith("data: ")
            ]
        added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
        (call,) = [item for item in added if item["type"] == "function_call"]
        response_id = events[-1]["response"]["id"]
        assert events[-1]["type"] == "response.completed"
        stored = (await client.get(f"/v1/responses/{response_id}")).json()
        assert stored == events[-1]["response"]
        follow = [
            {"role": "user", "content": "weather?"},
            {"type": "item_reference", "id": call["id"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"},
        ]
        await create(client, model="mini", input=follow)
    sent = sent_messages(upstream)
    assert sent[1]["tool_calls"][0]["id"] == CALLS[0][0]
    assert sent[2] == {"role": "tool", "tool_call_id": CALLS[0][0], "content": "sunny"}


async def test_two_responses_with_the_same_upstream_id_do_not_overwrite_each_other(
    upstream: MockUpstream,
) -> None:
    """Some OpenAI-compatible servers answer every request with the same completion id."""
    for text in ("first answer", "second answer"):
        upstream.add(Reply(json={**text_completion(text), "id": "chatcmpl-fixed"}))
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        first = await create(client, model="mini", input="one")
        second = await create(client, model="mini", input="two")
        assert first["id"] != second["id"]
        got = (await client.get(f"/v1/responses/{first['id']}")).json()
    assert got["output"][0]["content"][0]["text"] == "first answer"


async def test_two_instances_on_one_redis_share_stored_responses(
    upstream: MockUpstream, redis_url: str
) -> None:
    for text in ("one", "two", "three"):
        upstream.add(Reply(json=text_completion(text)))
    store = {"kind": "redis", "url": redis_url, "prefix": "test:"}
    raw = store_config(upstream, store=store)
    async with AsyncExitStack() as stack:
        a, b = [
            await stack.enter_async_context(serve(make_config(raw), client_key=ALICE_KEY))
            for _ in range(2)
        ]
        first = await create(a, ALICE_KEY, model="mini", input="first")
        assert (await b.get(f"/v1/responses/{first['id']}")).json() == first
        second = await create(
            b, ALICE_KEY, model="mini", input="second", previous_response_id=first["id"]
        )
        assert (await a.get(f"/v1/responses/{second['id']}")).json() == second
        message_id = second["output"][0]["id"]
        third = await create(
            a,
            ALICE_KEY,
            model="mini",
            input=[
                {"type": "item_reference", "id": message_id},
                {"role": "user", "content": "third"},
            ],
        )
        assert third["status"] == "completed"
        # Scoped there too: another key on the other replica finds nothing.
        await assert_gone(b, second["id"], CLIENT_KEY)
        deleted = await b.delete(f"/v1/responses/{first['id']}")
        assert deleted.status_code == 200
        await assert_gone(a, first["id"], ALICE_KEY)
        # A chain outlives its first record's deletion: each record holds the conversation.
        assert (await a.get(f"/v1/responses/{second['id']}")).status_code == 200
    assert sent_messages(upstream, 1) == [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
    ]
    assert sent_messages(upstream, 2) == [
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "third"},
    ]


@pytest.mark.parametrize(
    "refused",
    [
        {"background": True},
        {"input": [{"type": "item_reference", "id": "msg_nope"}]},
        {"previous_response_id": "resp_nope"},
    ],
    ids=["background", "unknown_reference", "unknown_previous"],
)
async def test_a_refused_request_logs_the_model_it_named(
    upstream: MockUpstream, caplog: pytest.LogCaptureFixture, refused: dict[str, Any]
) -> None:
    async with serve(make_config(store_config(upstream)), client_key=CLIENT_KEY) as client:
        caplog.clear()
        answer = await client.post(
            "/v1/responses", json={"model": "mini", "input": "hi", **refused}
        )
    assert answer.status_code == 400, answer.text
    (line,) = [r for r in caplog.records if r.name == "toolrelay.http"]
    assert "model=mini " in line.getMessage()
    assert upstream.requests(OPENAI_PATH) == []
