"""Everything the loop knows before its first model call: the servers listed, the approvals
answered in this request run (or denied), and the chat request with the MCP tools offered
beside the client's own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import InvalidRequest
from app.faces.responses.mcp_history import chat_call_id, item_id
from app.faces.responses.output import ItemIds
from app.faces.responses.request import Translation, translate
from app.mcp.registry import McpServers
from app.tool_loop.hosted import MCP, HostedServer
from app.tool_loop.items import Item, call_item
from app.tool_loop.listing import known_lists, list_servers
from app.tool_loop.offer import McpNames, offer


@dataclass(slots=True)
class Prepared:
    """The loop's starting point: the items that open the output (new tool lists), the calls
    approved in this request (run before the first model call), and the chat request."""

    translation: Translation
    names: McpNames
    functions: list[dict[str, Any]]
    first_choice: Any
    opening: list[Item] = field(default_factory=list)
    approved: list[tuple[str, Item]] = field(default_factory=list)  # (upstream name, item)


async def prepare(
    body: dict[str, Any],
    history: list[Any],
    given: list[Any],
    servers: list[HostedServer],
    mcp: McpServers,
    ids: ItemIds,
) -> Prepared:
    conversation = [*history, *given]
    # Checked before any server is contacted: a bad request is a 400, whatever the servers.
    translation = translate(_without_mcp(body, given), history)
    opening, listed = await list_servers(servers, known_lists(conversation), mcp, ids)
    taken = set(translation.tools.origins) | {
        tool["function"]["name"] for tool in translation.wire.get("tools", ())
    }
    functions, names = offer(listed, taken)
    prepared = Prepared(translation, names, functions, _choice(body.get("tool_choice"), names))
    prepared.opening = opening
    prepared.approved = _approved(given, conversation, names, ids)
    return prepared


def _without_mcp(body: dict[str, Any], given: list[Any]) -> dict[str, Any]:
    """The body the Responses face translates: no `mcp` tools, no cap it cannot enforce, and
    a tool_choice only when it is about the client's own tools."""
    cap = body.get("max_tool_calls")
    if cap is not None and (type(cap) is not int or cap < 0):
        raise InvalidRequest(
            "max_tool_calls: Input should be an integer of 0 or more", param="max_tool_calls"
        )
    stripped = {name: value for name, value in body.items() if name != "max_tool_calls"}
    stripped["tools"] = [
        tool for tool in body["tools"] if not (isinstance(tool, dict) and tool.get("type") == MCP)
    ]
    choice = body.get("tool_choice")
    if choice == "required" or (isinstance(choice, dict) and choice.get("type") == MCP):
        stripped.pop("tool_choice")
    stripped["input"] = given
    return stripped


def _choice(choice: Any, names: McpNames) -> Any:
    """The first round's tool_choice where it involves the MCP tools: `required` over every
    tool, or an MCP tool (a server's named one, or any of its tools)."""
    if choice == "required":
        return "required"
    if not (isinstance(choice, dict) and choice.get("type") == MCP):
        return None
    label, name = choice.get("server_label"), choice.get("name")
    matching = [
        upstream
        for upstream, offered in names.offered.items()
        if offered.server.label == label and (name is None or offered.tool.name == name)
    ]
    if not matching:
        raise InvalidRequest(
            f"tool_choice: the MCP server '{label}' offers no tool {name or ''}".rstrip(),
            param="tool_choice",
        )
    if len(matching) == 1:
        return {"type": "function", "function": {"name": matching[0]}}
    return {"mcp_any": matching}


def _approved(
    given: list[Any], conversation: list[Any], names: McpNames, ids: ItemIds
) -> list[tuple[str, Item]]:
    """Every approved call of this request's approval responses, once: a request already
    answered by an `mcp_call` in the conversation is not run again. Denied ones are the
    history's (the model reads them as denied)."""
    requests = {
        item["id"]: item
        for item in conversation
        if _of_type(item, "mcp_approval_request") and isinstance(item.get("id"), str)
    }
    done = {
        item["approval_request_id"]
        for item in conversation
        if _of_type(item, "mcp_call") and isinstance(item.get("approval_request_id"), str)
    }
    approved: list[tuple[str, Item]] = []
    for position, item in enumerate(given):
        if not (isinstance(item, dict) and item.get("type") == "mcp_approval_response"):
            continue
        request_id = item.get("approval_request_id")
        request = requests.get(request_id) if isinstance(request_id, str) else None
        where = f"input[{position}].approval_request_id"
        if request is None:
            raise InvalidRequest(f"{where}: no approval request '{request_id}'", param=where)
        if item.get("approve") is not True or request_id in done:
            continue
        upstream = _upstream_name(request, names, where)
        arguments = request.get("arguments") or "{}"
        if not isinstance(arguments, str):
            raise InvalidRequest(
                f"{where}: the approval request '{request_id}' has no arguments string",
                param=where,
            )
        approved.append(
            (
                upstream,
                call_item(
                    item_id(ids.next("mcp"), chat_call_id(request["id"])),
                    request["server_label"],
                    request["name"],
                    arguments,
                    request_id,
                ),
            )
        )
        done.add(request_id)
    return approved


def _of_type(item: Any, kind: str) -> bool:
    return isinstance(item, dict) and item.get("type") == kind


def _upstream_name(request: Item, names: McpNames, where: str) -> str:
    for upstream, offered in names.offered.items():
        if (offered.server.label, offered.tool.name) == (
            request.get("server_label"),
            request.get("name"),
        ):
            return upstream
    raise InvalidRequest(
        f"{where}: the approved call's tool '{request.get('name')}' of '"
        f"{request.get('server_label')}' is not among this request's mcp tools",
        param=where,
    )
