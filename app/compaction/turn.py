"""Answering a compaction: a `/v1/responses` request ending in `compaction_trigger` gets a
response whose output is one `compaction` item (whole, or as the Responses events a stream
carries), and `POST /v1/responses/compact` gets OpenAI's `response.compaction` object: the
user's messages as they were, then the item. The summary is dispatched before anything is
sent, so its failures keep their status (and its retries and fallbacks apply)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from app.compaction.chain import kept_messages
from app.compaction.summary import Summary, summarise, summary_request
from app.faces.responses.compaction import compaction_item
from app.faces.responses.output import (
    ItemIds,
    finished_response,
    response_id,
    response_shell,
    responses_usage,
)
from app.request_record import RequestRecord
from app.routing.dispatch import Answer
from app.sse import named_event_frame
from app.state import ProxyState

Save = Callable[[dict[str, Any]], Awaitable[None]] | None


async def _summary(
    proxy: ProxyState,
    record: RequestRecord,
    body: dict[str, Any],
    conversation: tuple[list[Any], list[Any]],
) -> tuple[Summary, str, ItemIds]:
    history, given = conversation
    summary = await summarise(proxy, record, summary_request(body, history, given))
    resp_id = response_id(proxy.new_id())
    return summary, resp_id, ItemIds(resp_id.removeprefix("resp_"))


async def triggered(
    proxy: ProxyState,
    record: RequestRecord,
    body: dict[str, Any],
    conversation: tuple[list[Any], list[Any]],
    save: Save,
) -> Answer:
    """`conversation`: the stored history and this request's input, its trigger taken off.
    The response is stored (when asked) before the client can read it, like any other."""
    summary, resp_id, ids = await _summary(proxy, record, body, conversation)
    shell = response_shell(body, resp_id=resp_id, created=int(proxy.clock()), model=body["model"])
    item = compaction_item(ids.next("cmp"), summary.text)
    response = finished_response(shell, [item], "stop", summary.usage)
    if save is not None:
        await save(response)
    if body.get("stream") is not True:
        return Answer(summary.model_name, completion=response, headers=summary.headers)
    frames = _frames(shell, item, response)
    return Answer(summary.model_name, frames=frames, headers=summary.headers)


async def _frames(
    shell: dict[str, Any], item: dict[str, Any], response: dict[str, Any]
) -> AsyncGenerator[bytes, None]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": shell},
        {"type": "response.in_progress", "response": shell},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    for sequence, event in enumerate(events):
        yield named_event_frame({**event, "sequence_number": sequence})


async def compacted(
    proxy: ProxyState,
    record: RequestRecord,
    body: dict[str, Any],
    conversation: tuple[list[Any], list[Any]],
) -> Answer:
    """`/v1/responses/compact`'s answer; nothing is stored (OpenAI's is not a response)."""
    summary, resp_id, ids = await _summary(proxy, record, body, conversation)
    history, given = conversation
    output = [*kept_messages([*history, *given]), compaction_item(ids.next("cmp"), summary.text)]
    resource = {
        "id": resp_id,
        "object": "response.compaction",
        "created_at": int(proxy.clock()),
        "output": output,
        "usage": responses_usage(summary.usage),
    }
    return Answer(summary.model_name, completion=resource, headers=summary.headers)
