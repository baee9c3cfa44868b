"""The Responses API's hosted `mcp` tool run by ToolRelay (CONTRACT.md, "MCP"), in process,
against real MCP servers (the mcp SDK's own, tests/helpers/mcp_servers.py, wrapped to record
what reached them) and a real openai-kind upstream scripted like a model
(tests/helpers/hosted_mcp.py). Every answer is checked against OpenAI's spec by the client's
hook (tests/integration/conftest.py); streams also by check_events. The matrix of kinds and
approvals, through the openai SDK and a proxy process, is tests/e2e/test_hosted_mcp_sdk.py;
rounds, names and accounting are test_hosted_mcp_rounds.py."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.hosted_mcp import (
    SCRIPT,
    TOOLS,
    Servers,
    calc,
    create,
    final,
    fresh,
    kinds,
    mcp_world,
    proxy,
)
from tests.helpers.mcp_servers import serve
from tests.integration.conftest import assert_error

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with mcp_world() as running:
        yield running


@pytest.fixture
def world(servers: Servers) -> Servers:
    return fresh(servers)


STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])


@STREAMS
async def test_a_failing_tool_is_a_failed_call_and_the_response_goes_on(
    world: Servers, stream: bool
) -> None:
    SCRIPT.calls = [("calc__fail", {})]
    async with proxy(world) as client:
        response = final(await create(client, stream))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    call = response["output"][1]
    assert call["status"] == "failed"
    assert call["output"] is None
    assert call["error"]["type"] == "mcp_tool_execution_error"
    assert "Error executing tool fail" in json.dumps(call["error"]["content"])
    told = world.bodies()[-1]["messages"][-1]
    assert told["role"] == "tool"
    assert told["content"].startswith("Tool error: ")
    assert "Error executing tool fail" in told["content"]  # the SDK server's own words
    assert response["status"] == "completed"


@STREAMS
async def test_a_server_that_cannot_be_listed_is_424_before_any_model_call(
    world: Servers, stream: bool
) -> None:
    SCRIPT.calls = [("broken__add", {"a": 1, "b": 2})]
    tools = [calc(), {"type": "mcp", "server_label": "broken"}]
    async with proxy(world) as client:
        answer = await create(client, stream, tools=tools)
    error = assert_error(answer, 424)
    assert error["type"] == "external_connector_error"
    assert error["message"].startswith("Error retrieving tool list from MCP server: 'broken'")
    assert error["message"].count("broken") == 1  # the label said once
    assert world.bodies() == []


@pytest.mark.parametrize(
    ("request_fields", "param"),
    [({"instructions": 5}, "instructions"), ({"max_tool_calls": -1}, "max_tool_calls")],
)
async def test_a_bad_request_is_400_before_any_server_is_listed(
    world: Servers, request_fields: dict[str, Any], param: str
) -> None:
    tools = [calc(), {"type": "mcp", "server_label": "broken"}]
    async with proxy(world) as client:
        answer = await create(client, False, tools=tools, **request_fields)
    assert assert_error(answer, 400)["param"] == param
    assert world.calc.methods == []  # the listing never started


@STREAMS
async def test_server_url_outside_remote_urls_is_400_and_never_contacted(
    world: Servers, stream: bool
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        tool = {"type": "mcp", "server_label": "evil", "server_url": f"http://127.0.0.1:{port}/mcp"}
        async with proxy(world) as client:
            answer = await create(client, stream, tools=[calc(), tool])
        error = assert_error(answer, 400)
        assert error["param"] == "tools[1].server_url"
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected: the proxy made no request there
    assert world.bodies() == []
    assert world.calc.methods == []


async def test_an_allowed_server_url_is_used(world: Servers) -> None:
    SCRIPT.calls = [("remote__add", {"a": 2, "b": 3})]
    tool = {"type": "mcp", "server_label": "remote", "server_url": world.url}
    async with proxy(world) as client:
        answer = await create(client, False, tools=[tool])
    response = final(answer)
    assert kinds(response) == ["mcp_list_tools", "mcp_approval_request"]  # it asks first
    assert response["output"][0]["server_label"] == "remote"
    assert world.calc.listings() == 1


@STREAMS
async def test_headers_and_authorization_reach_the_server_only(
    world: Servers, stream: bool
) -> None:
    SCRIPT.calls = [("calc__header", {"name": "x-trace"})]
    tool = calc(headers={"X-Trace": "hdr-VALUE-1"}, authorization="auth-TOKEN-2")
    async with proxy(world) as client:
        response = final(await create(client, stream, tools=[tool]))
        stored = await client.get(f"/v1/responses/{response['id']}")
        items = await client.get(f"/v1/responses/{response['id']}/input_items")
    call = response["output"][1]
    assert (call["name"], call["output"]) == ("header", "hdr-VALUE-1")  # it reached the server
    assert all(seen.get("authorization") == "Bearer auth-TOKEN-2" for seen in world.calc.headers)
    assert all(seen.get("x-trace") == "hdr-VALUE-1" for seen in world.calc.headers)
    assert response["tools"][0]["headers"] is None
    assert "authorization" not in response["tools"][0]
    assert stored.status_code == items.status_code == 200
    for seen in (json.dumps(response), stored.text, items.text):
        assert "auth-TOKEN-2" not in seen
    # The header's value is in the call's output (the tool said it back, and the model after
    # it) and nowhere else.
    for shown in (response, stored.json()):
        assert "hdr-VALUE-1" not in json.dumps({**shown, "output": kinds(shown)})
    assert "hdr-VALUE-1" not in items.text
    assert stored.json()["output"] == response["output"]


async def test_a_conversations_tool_list_is_reused(world: Servers) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    async with proxy(world) as client:
        first = final(await create(client, False))
        SCRIPT.calls = [("calc__echo", {"text": "hi"})]
        second = final(await create(client, True, previous_response_id=first["id"], input="more"))
    assert kinds(first) == ["mcp_list_tools", "mcp_call", "message"]
    assert kinds(second) == ["message"]  # the model has a result: it answers
    assert world.calc.listings() == 1
    offered = [tool["function"]["name"] for tool in world.bodies()[-1]["tools"]]
    assert offered == [f"calc__{name}" for name in TOOLS]  # offered from the stored list


@STREAMS
async def test_max_rounds_withdraws_the_tools(world: Servers, stream: bool) -> None:
    SCRIPT.calls, SCRIPT.persist = [("calc__add", {"a": 1, "b": 1})], True
    async with proxy(world, max_rounds=2) as client:
        response = final(await create(client, stream))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "mcp_call", "message"]
    bodies = world.bodies()
    assert [len(body.get("tools") or ()) for body in bodies] == [len(TOOLS), len(TOOLS), 0]
    assert response["usage"]["input_tokens"] == 30
    assert world.calc.count("tools/call") == 2


@STREAMS
async def test_allowed_tools_filter_the_list(world: Servers, stream: bool) -> None:
    SCRIPT.calls = [("calc__echo", {"text": "hi"})]
    async with proxy(world) as client:
        response = final(await create(client, stream, tools=[calc(allowed_tools=["echo", "add"])]))
    assert [tool["name"] for tool in response["output"][0]["tools"]] == ["add", "echo"]
    assert [t["function"]["name"] for t in world.bodies()[0]["tools"]] == [
        "calc__add",
        "calc__echo",
    ]
    assert response["output"][1]["output"] == "hi"
    assert response["tools"][0]["allowed_tools"] == ["echo", "add"]


@pytest.mark.parametrize(
    "allowed", [["nosuch"], {"tool_names": ["nosuch"]}, {"read_only": True}], ids=str
)
async def test_a_filter_leaving_nothing_is_400(world: Servers, allowed: Any) -> None:
    async with proxy(world) as client:
        answer = await create(client, False, tools=[calc(allowed_tools=allowed)])
    assert assert_error(answer, 400)["param"] == "tools[0].allowed_tools"
    assert world.bodies() == []


@STREAMS
async def test_tool_choice_mcp_forces_the_named_tool_once(world: Servers, stream: bool) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    choice = {"type": "mcp", "server_label": "calc", "name": "add"}
    async with proxy(world) as client:
        response = final(await create(client, stream, tool_choice=choice))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    first, second = world.bodies()
    assert first["tool_choice"] == {"type": "function", "function": {"name": "calc__add"}}
    assert second.get("tool_choice") in (None, "auto")
    assert response["tool_choice"] == choice


async def test_tool_choice_mcp_server_requires_one_of_its_tools(world: Servers) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    choice = {"type": "mcp", "server_label": "calc"}
    async with proxy(world) as client:
        response = final(await create(client, False, tool_choice=choice))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    assert world.bodies()[0]["tool_choice"] == "required"


@STREAMS
async def test_parallel_calls_run_in_the_models_order(world: Servers, stream: bool) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3}), ("calc__echo", {"text": "hi"})]
    async with proxy(world) as client:
        response = final(await create(client, stream))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "mcp_call", "message"]
    assert [item["output"] for item in response["output"][1:3]] == ["5", "hi"]
    results = [m for m in world.bodies()[-1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        ("call_0", "5"),
        ("call_1", "hi"),
    ]


class Redirecting:
    """An allowed remote URL whose server redirects every request to `target`."""

    def __init__(self, target: str) -> None:
        self.target = target

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = [(b"location", self.target.encode()), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 307, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


async def test_an_allowed_server_url_cannot_redirect_elsewhere(world: Servers) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        elsewhere = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        with serve(Redirecting(elsewhere)) as url:
            tool = {"type": "mcp", "server_label": "remote", "server_url": url}
            async with proxy(world, remote_urls=[url]) as client:
                answer = await create(client, False, tools=[tool])
        with pytest.raises(BlockingIOError):
            listener.accept()  # the redirect was not followed
    assert assert_error(answer, 424)["type"] == "external_connector_error"
