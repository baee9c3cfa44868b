"""The hosted `mcp` tool on /v1/responses (CONTRACT.md, "MCP"), end to end: the real openai
SDK against a real proxy process whose `mcp:` section names real MCP servers
(tests/helpers/mcp_servers.py: stateless Streamable HTTP, a legacy-handshake server, a stdio
process), in front of openai-, anthropic- and gemini-kind doubles scripted like a model (call
the MCP tool, then answer with its result) and the demo kind. Every answer, item and stream
event is held to OpenAI's published spec (tests/conformance)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.conformance.spec import check_response
from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    GEMINI_KEY,
    RunningProxy,
    every_kind_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.hosted_mcp import (
    ROUND_INPUT,
    SCRIPT,
    TOOLS,
    Recording,
    ScriptedAnthropic,
    ScriptedGemini,
    ScriptedOpenAI,
    check_events,
    dead_url,
    offered,
    told,
    wire,
)
from tests.helpers.mcp_servers import http_app, serve, stdio_command
from tests.helpers.mock_upstream import MockUpstream

pytestmark = pytest.mark.e2e


@dataclass
class World:
    proxy: RunningProxy
    oa: ScriptedOpenAI
    an: ScriptedAnthropic
    gm: ScriptedGemini
    servers: dict[str, Recording]

    def upstream(self, model: str) -> MockUpstream:
        return {"mini": self.oa, "claude": self.an, "gem": self.gm}[model]

    def bodies(self, model: str) -> list[Any]:
        return [exchange.body for exchange in self.upstream(model).exchanges]


def mcp_section(urls: dict[str, str], dead: str) -> str:
    stdio = json.dumps(stdio_command())
    return f"""
mcp:
  remote_urls: ["{urls["calc"].rsplit("/", 1)[0]}/*"]
  max_rounds: 3
  servers:
    calc: {{url: "{urls["calc"]}", require_approval: never}}
    old: {{url: "{urls["old"]}", require_approval: never}}
    local: {{command: {stdio}, require_approval: never}}
    gated: {{url: "{urls["gated"]}"}}
    broken: {{url: "{dead}"}}
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    servers = {
        "calc": Recording(http_app("stateless")),
        "old": Recording(http_app("legacy")),
        "gated": Recording(http_app("stateless")),
    }
    with (
        serve(servers["calc"]) as calc,
        serve(servers["old"]) as old,
        serve(servers["gated"]) as gated,
        ScriptedOpenAI() as oa,
        ScriptedAnthropic(ANTHROPIC_KEY) as an,
        ScriptedGemini(GEMINI_KEY) as gm,
    ):
        config = every_kind_config(oa.base_url, an.base_url, gm.base_url)
        config += mcp_section({"calc": calc, "old": old, "gated": gated}, dead_url())
        with run_proxy(config, Path(tmp_path_factory.mktemp("hosted-mcp"))) as proxy:
            yield World(proxy, oa, an, gm, servers)


@pytest.fixture
def client(world: World) -> openai.OpenAI:
    for upstream in (world.oa, world.an, world.gm):
        upstream.reset()
    for server in world.servers.values():
        server.methods.clear()
        server.headers.clear()
    SCRIPT.reset()
    return sdk_client(world.proxy)


# --- checks ------------------------------------------------------------------------------------


def mcp_tool(label: str, **more: Any) -> Any:
    return {"type": "mcp", "server_label": label, **more}


def streamed(client: openai.OpenAI, **request: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The stream's events (each checked against the spec) and the terminal event's response,
    which get_final_response() agrees with (its items carry the SDK's own `parsed`)."""
    with client.responses.stream(**request) as stream:
        events = [wire(event.to_dict()) for event in stream]
        sdk_final = stream.get_final_response()
    final = events[-1]["response"]
    assert sdk_final.id == final["id"]
    assert sdk_final.status == final["status"]
    assert [item.type for item in sdk_final.output] == [item["type"] for item in final["output"]]
    check_events(events, final)
    return events, final


def answer(client: openai.OpenAI, stream: bool, **request: Any) -> dict[str, Any]:
    if stream:
        return streamed(client, **request)[1]
    return client.responses.create(**request).to_dict()


def check_ran(response: dict[str, Any], label: str, rounds: int, model: str) -> None:
    """[mcp_list_tools, mcp_call, message] in OpenAI's shapes, the call's result in the
    model's answer, usage summed over `rounds` model calls."""
    check_response(response)
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == [
        "mcp_list_tools",
        "mcp_call",
        "message",
    ]
    listed, call, said = response["output"]
    assert listed["server_label"] == label
    assert [t["name"] for t in listed["tools"]] == TOOLS
    assert (call["server_label"], call["name"], call["status"]) == (label, "add", "completed")
    assert json.loads(call["arguments"]) == {"a": 2, "b": 3}
    assert call["output"] == "5"
    assert call["approval_request_id"] is None
    assert call["error"] is None
    assert said["content"][0]["text"].startswith("RESULT: ")
    assert "5" in said["content"][0]["text"]
    if model in ROUND_INPUT:
        assert response["usage"]["input_tokens"] == rounds * ROUND_INPUT[model]
        usage = response["usage"]
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def check_upstream(world: World, model: str, label: str) -> None:
    """Round 1 offered every MCP tool as a function; round 2 had the call and its result."""
    first, second = world.bodies(model)
    assert offered(model, first) == [f"{label}__{tool}" for tool in TOOLS]
    calls, result = told(model, second, f"{label}__add")
    assert calls == [f"{label}__add"]
    assert result is not None
    assert "5" in result


# --- each kind, stream and not -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", ["mini", "claude", "gem"])
def test_each_kind_runs_the_tool_and_answers(
    world: World, client: openai.OpenAI, model: str, stream: bool
) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    request = {"model": model, "input": "2+3?", "tools": [mcp_tool("calc")]}
    response = answer(client, stream, **request)
    check_ran(response, "calc", 2, model)
    check_upstream(world, model, "calc")
    assert world.servers["calc"].listings() == 1, world.servers["calc"].methods
    assert world.servers["calc"].count("tools/call") == 1
    assert client.responses.retrieve(response["id"]).to_dict()["output"] == response["output"]
    later = answer(client, stream, previous_response_id=response["id"], **request)
    check_response(later)
    assert [item["type"] for item in later["output"]] == ["message"]  # the list was reused
    assert world.servers["calc"].listings() == 1
    assert told(model, world.bodies(model)[-1], "calc__add")[0] == ["calc__add"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("label", ["old", "local"])
def test_legacy_and_stdio_servers(
    world: World, client: openai.OpenAI, label: str, stream: bool
) -> None:
    SCRIPT.calls = [(f"{label}__add", {"a": 2, "b": 3})]
    request = {"model": "mini", "input": "2+3?", "tools": [mcp_tool(label)]}
    check_ran(answer(client, stream, **request), label, 2, "mini")
    check_upstream(world, "mini", label)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_demo_kind_calls_the_first_offered_tool(client: openai.OpenAI, stream: bool) -> None:
    """The demo calls the first tool offered (auto), with schema-valid arguments, and answers
    once its result is back."""
    request = {"model": "demo", "input": "add", "tools": [mcp_tool("calc")]}
    response = answer(client, stream, **request)
    check_response(response)
    assert [i["type"] for i in response["output"]] == ["mcp_list_tools", "mcp_call", "message"]
    call = response["output"][1]
    arguments = json.loads(call["arguments"])
    assert call["name"] == "add"
    assert call["status"] == "completed"
    assert call["output"] == str(arguments["a"] + arguments["b"])


# --- approvals ---------------------------------------------------------------------------------


def approval_needed(
    client: openai.OpenAI, stream: bool, model: str = "mini", **more: Any
) -> dict[str, Any]:
    """A first turn on `gated` (require_approval defaults to always): the call waits."""
    SCRIPT.calls = [("gated__add", {"a": 2, "b": 3})]
    request = {"model": model, "input": "2+3?", "tools": [mcp_tool("gated")], **more}
    response = answer(client, stream, **request)
    check_response(response)
    assert response["status"] == "completed"
    assert [i["type"] for i in response["output"]] == ["mcp_list_tools", "mcp_approval_request"]
    asked = response["output"][1]
    assert (asked["server_label"], asked["name"]) == ("gated", "add")
    assert json.loads(asked["arguments"]) == {"a": 2, "b": 3}
    return response


def approval(request_id: str, approve: bool) -> dict[str, Any]:
    return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": approve}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", ["mini", "claude", "gem"])
def test_approved_call_runs_once_with_the_stored_arguments(
    world: World, client: openai.OpenAI, model: str, stream: bool
) -> None:
    first = approval_needed(client, stream, model)
    gated = world.servers["gated"]
    assert gated.count("tools/call") == 0
    assert len(world.bodies(model)) == 1
    asked = first["output"][1]
    SCRIPT.calls = [("gated__add", {"a": 40, "b": 2})]  # not what runs: the stored call does
    turn = {"model": model, "tools": [mcp_tool("gated")]}
    second = answer(
        client, stream, previous_response_id=first["id"], input=[approval(asked["id"], True)],
        **turn,
    )  # fmt: skip
    check_response(second)
    assert [i["type"] for i in second["output"]] == ["mcp_call", "message"]
    call = second["output"][0]
    assert call["approval_request_id"] == asked["id"]
    assert call["arguments"] == asked["arguments"]
    assert (call["status"], call["output"]) == ("completed", "5")
    assert (gated.count("tools/call"), gated.listings()) == (1, 1)  # the list was reused
    calls, result = told(model, world.bodies(model)[-1], "gated__add")
    assert calls == ["gated__add"]
    assert result is not None
    assert "5" in result
    third = answer(client, stream, previous_response_id=second["id"], input="again?", **turn)
    check_response(third)
    assert [i["type"] for i in third["output"]] == ["message"]
    assert (gated.count("tools/call"), gated.listings()) == (1, 1)
    assert told(model, world.bodies(model)[-1], "gated__add") == (calls, result)


def test_an_approval_sent_again_does_not_run_again(world: World, client: openai.OpenAI) -> None:
    first = approval_needed(client, False)
    request_id = first["output"][1]["id"]
    tools = [mcp_tool("gated")]
    second = client.responses.create(
        model="mini", previous_response_id=first["id"], input=[approval(request_id, True)],
        tools=tools,
    )  # fmt: skip
    again = client.responses.create(
        model="mini", previous_response_id=second.id, input=[approval(request_id, True)],
        tools=tools,
    )  # fmt: skip
    check_response(again.to_dict())
    assert [item.type for item in again.output] == ["message"]
    assert world.servers["gated"].count("tools/call") == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", ["mini", "gem"])
def test_denied_call_is_not_run_and_the_model_is_told(
    world: World, client: openai.OpenAI, model: str, stream: bool
) -> None:
    first = approval_needed(client, stream, model)
    second = answer(
        client, stream, model=model, previous_response_id=first["id"],
        input=[approval(first["output"][1]["id"], False)], tools=[mcp_tool("gated")],
    )  # fmt: skip
    check_response(second)
    assert [i["type"] for i in second["output"]] == ["message"]
    assert world.servers["gated"].count("tools/call") == 0
    calls, result = told(model, world.bodies(model)[-1], "gated__add")
    assert calls == ["gated__add"]
    assert result is not None
    assert "denied" in result


@pytest.mark.parametrize("model", ["mini", "claude", "gem"])
def test_store_false_sends_the_items_back(world: World, client: openai.OpenAI, model: str) -> None:
    first = approval_needed(client, False, model, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first["id"])
    asked = first["output"][1]
    conversation = [{"role": "user", "content": "2+3?"}, *first["output"]]
    second = client.responses.create(
        model=model, store=False, tools=[mcp_tool("gated")],
        input=[*conversation, approval(asked["id"], True)],
    ).to_dict()  # fmt: skip
    check_response(second)
    assert [i["type"] for i in second["output"]] == ["mcp_call", "message"]
    assert second["output"][0]["approval_request_id"] == asked["id"]
    gated = world.servers["gated"]
    assert gated.count("tools/call") == 1
    assert gated.listings() == 1
    calls, result = told(model, world.bodies(model)[-1], "gated__add")
    assert calls == ["gated__add"]
    assert result is not None
    assert "5" in result


def test_unknown_approval_request_is_400(world: World, client: openai.OpenAI) -> None:
    first = approval_needed(client, False)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(
            model="mini", previous_response_id=first["id"], tools=[mcp_tool("gated")],
            input=[approval("mcpr_nosuch", True)],
        )  # fmt: skip
    assert refused.value.body["param"] == "input[0].approval_request_id"  # type: ignore[index]
    assert world.servers["gated"].count("tools/call") == 0


# --- failures and secrets ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_server_that_cannot_be_listed_is_424(
    world: World, client: openai.OpenAI, stream: bool
) -> None:
    request = {"model": "claude", "input": "hi", "tools": [mcp_tool("calc"), mcp_tool("broken")]}
    with pytest.raises(openai.APIStatusError) as failed:
        answer(client, stream, **request)
    assert failed.value.status_code == 424
    error = failed.value.body
    assert isinstance(error, dict)
    assert (error["type"], error["code"], error["param"]) == (
        "external_connector_error",
        "http_error",
        "tools",
    )
    assert error["message"].startswith("Error retrieving tool list from MCP server: 'broken'")
    assert world.bodies("claude") == []


def test_headers_and_authorization_reach_the_server_and_nothing_else(
    world: World, client: openai.OpenAI
) -> None:
    SCRIPT.calls = [("calc__header", {"name": "authorization"})]
    tool = mcp_tool("calc", headers={"X-Trace": "trace-HDR-77"}, authorization="tok-AUTH-88")
    response = answer(client, True, model="gem", input="who?", tools=[tool])
    assert response["output"][1]["output"] == "Bearer tok-AUTH-88"  # the server got it
    assert all(seen.get("x-trace") == "trace-HDR-77" for seen in world.servers["calc"].headers)
    stored = client.responses.retrieve(response["id"]).to_dict()
    items = client.responses.input_items.list(response["id"]).to_dict()
    for shown in (response, stored):
        assert shown["tools"][0]["headers"] is None
        assert "authorization" not in shown["tools"][0]
        assert "trace-HDR-77" not in json.dumps(shown)
        assert "tok-AUTH-88" not in json.dumps({**shown, "output": None})
    assert "tok-AUTH-88" not in json.dumps(items)
    assert "trace-HDR-77" not in json.dumps(items)
    logged = world.proxy.log.read_text()
    assert "tok-AUTH-88" not in logged
    assert "trace-HDR-77" not in logged
