"""Stored responses, the pure part: what a record holds, how a request's earlier conversation
is rebuilt from one (`previous_response_id`) and from stored items (`item_reference`, and
reasoning items sent back with only their id), and the `input_items` list page. The caller
does the store's I/O."""

from __future__ import annotations

from typing import Any

from app.errors import InvalidRequest
from app.faces.responses.compaction import compacted
from app.faces.responses.output import ItemIds, presented
from app.faces.responses.request import input_items

Item = dict[str, Any]
ID_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctco",
    "reasoning": "rs",
}
MAX_PAGE = 100
DEFAULT_PAGE = 20


class PreviousResponseNotFound(InvalidRequest):
    code = "previous_response_not_found"


class ResponseNotFound(InvalidRequest):
    status = 404


def missing(response_id: str) -> ResponseNotFound:
    return ResponseNotFound(f"No response found with id '{response_id}'.", param="response_id")


def not_found(response_id: str) -> PreviousResponseNotFound:
    return PreviousResponseNotFound(
        f"Previous response with id '{response_id}' not found.", param="previous_response_id"
    )


def deleted(response_id: str) -> dict[str, Any]:
    """DELETE's answer, as OpenAI's API reference shows it (`object` is "response")."""
    return {"id": response_id, "object": "response", "deleted": True}


def history_of(record: dict[str, Any]) -> list[Item]:
    """A stored response's whole conversation: what led to it, then its own output (after a
    compaction, only what the summary does not stand for)."""
    return compacted([*record["input"], *record["response"]["output"]])


def referenced_ids(items: list[Any]) -> list[str]:
    """The stored items a request's input points at: `item_reference`s, and reasoning items
    that came back with only their id (a client that keeps ids, not content)."""
    return [item["id"] for item in items if _reference(item) or _bare_reasoning(item)]


def resolved_input(items: list[Any], found: dict[str, Item]) -> list[Any]:
    """The input with each reference replaced by the stored item; an unknown reference is a
    400 naming it (a bare reasoning item not found stays as it is: its text is optional)."""
    resolved: list[Any] = []
    for position, item in enumerate(items):
        if _reference(item):
            if item["id"] not in found:
                raise InvalidRequest(
                    f"Item with id '{item['id']}' not found.", param=f"input.{position}"
                )
            resolved.append(found[item["id"]])
        elif _bare_reasoning(item) and item["id"] in found:
            resolved.append(found[item["id"]])
        else:
            resolved.append(item)
    return resolved


def _reference(item: Any) -> bool:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return False
    return item.get("type") == "item_reference" or ("type" not in item and len(item) == 1)


def _bare_reasoning(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") == "reasoning"
        and isinstance(item.get("id"), str)
        and not item.get("encrypted_content")
    )


def stored_input(given: Any, ids: ItemIds) -> list[Item]:
    """This request's own input items as kept: each with an id, a message's content as parts
    (as `input_items` lists them)."""
    kept: list[Item] = []
    for item in input_items(given):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        copy = {"type": kind, **item}
        if not isinstance(copy.get("id"), str):
            copy["id"] = ids.next(ID_PREFIXES.get(kind, "item"))
        if kind == "message" and isinstance(copy.get("content"), str):
            part = "output_text" if copy.get("role") == "assistant" else "input_text"
            copy["content"] = [{"type": part, "text": copy["content"]}]
        if kind in ("function_call_output", "custom_tool_call_output", "message"):
            copy.setdefault("status", "completed")
        kept.append(copy)
    return kept


def input_items_page(
    record: dict[str, Any], *, order: str, limit: int, after: str | None
) -> dict[str, Any]:
    """OpenAI's list shape for GET /v1/responses/{id}/input_items (`desc` first by default)."""
    items = list(record["input"])
    if order == "desc":
        items.reverse()
    if after is not None:
        ids = [item.get("id") for item in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


def page_arguments(query: dict[str, str]) -> tuple[str, int, str | None]:
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("order: Input should be 'asc' or 'desc'", param="order")
    try:
        limit = int(query.get("limit", DEFAULT_PAGE))
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequest(f"limit: must be an integer from 1 to {MAX_PAGE}", param="limit")
    return order, limit, query.get("after")


def shown(record: dict[str, Any], include: list[str]) -> dict[str, Any]:
    """A stored response as GET returns it."""
    return presented(record["response"], show_encrypted="reasoning.encrypted_content" in include)
