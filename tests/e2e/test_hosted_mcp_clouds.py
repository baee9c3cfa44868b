"""The hosted `mcp` tool on /v1/responses for the cloud kinds (CONTRACT.md, "MCP": "for every
upstream kind"), end to end: the real openai SDK against a real proxy process whose `mcp:`
section names a real MCP server (tests/helpers/mcp_servers.py), in front of validating doubles
scripted like a model (tests/helpers/hosted_mcp_clouds.py): Claude on Bedrock (Converse, the
double checking the key and every body), Gemini and Claude on Vertex AI (a token from the
token endpoint double for the proxy's service account; a Gemini call's thought signature must
come back), and an Azure deployment. Each runs the tool, stream and not, with every item and
event held to OpenAI's published spec, and each upstream's second round must carry the call
and its result in the upstream's own shape; an approval round trip on Bedrock and Vertex
Gemini. tests/e2e/test_hosted_mcp_sdk.py does the same for the other kinds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.conformance.spec import check_response
from tests.e2e.conftest import RunningProxy, keyed_config, run_proxy, sdk_client
from tests.e2e.test_hosted_mcp_sdk import answer, approval, check_ran, mcp_tool
from tests.helpers.codex_upstreams import tool_result
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.hosted_mcp import SCRIPT, TOOLS, Recording, offered, told
from tests.helpers.hosted_mcp_clouds import (
    SIGNATURE,
    ScriptedAzure,
    ScriptedBedrock,
    ScriptedVertex,
)
from tests.helpers.mcp_servers import http_app, serve
from tests.helpers.mock_bedrock import API_KEY as BEDROCK_KEY
from tests.helpers.mock_upstream import MockUpstream

pytestmark = pytest.mark.e2e

PROJECT, REGION = "test-project", "us-east5"
AZURE_KEY = "azure-key-TEST-SECRET"
BEDROCK_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_CLAUDE_ID = "claude-sonnet-4-5@20250929"
MODELS = ["claude-bedrock", "gemini-vertex", "claude-vertex", "gpt-azure"]
SHAPE = {"gemini-vertex": "gem", "claude-vertex": "claude", "gpt-azure": "mini"}
"""Whose shapes each model's requests take (hosted_mcp.offered / told); Bedrock's are its own."""
PUBLISHER = {"gemini-vertex": "/publishers/google/", "claude-vertex": "/publishers/anthropic/"}


@dataclass
class World:
    proxy: RunningProxy
    bedrock: MockUpstream  # the doubles, as their `with` gives them
    vertex: MockUpstream
    azure: MockUpstream
    servers: dict[str, Recording]

    def bodies(self, model: str) -> list[Any]:
        """What `model`'s upstream was sent, in order (Vertex's, by publisher)."""
        upstream = {"claude-bedrock": self.bedrock, "gpt-azure": self.azure}.get(model, self.vertex)
        return [
            exchange.body
            for exchange in upstream.exchanges
            if PUBLISHER.get(model, "/") in exchange.path
        ]


def config(world: dict[str, str], key_file: Path, calc: str, gated: str) -> str:
    return (
        keyed_config(
            f"""  aws: {{kind: bedrock, region: us-east-1, base_url: "{world["aws"]}",
        api_key: "{BEDROCK_KEY}"}}
  gcp: {{kind: vertex, project: {PROJECT}, region: {REGION}, base_url: "{world["gcp"]}",
        credentials: "{key_file}"}}
  az: {{kind: azure, base_url: "{world["az"]}", api_key: {AZURE_KEY},
        api_version: "2024-10-21"}}""",
            f"""  - {{name: claude-bedrock, provider: aws, model: "{BEDROCK_ID}", max_tokens: 1024}}
  - {{name: gemini-vertex, provider: gcp, model: gemini-2.5-flash}}
  - {{name: claude-vertex, provider: gcp, model: "{VERTEX_CLAUDE_ID}", max_tokens: 1024}}
  - {{name: gpt-azure, provider: az, model: my-gpt}}""",
        )
        + f"""
mcp:
  remote_urls: ["{calc.rsplit("/", 1)[0]}/*"]
  max_rounds: 3
  servers:
    calc: {{url: "{calc}", require_approval: never}}
    gated: {{url: "{gated}"}}
"""
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    servers = {"calc": Recording(http_app("stateless")), "gated": Recording(http_app("stateless"))}
    directory = Path(tmp_path_factory.mktemp("hosted-mcp-clouds"))
    with (
        serve(servers["calc"]) as calc,
        serve(servers["gated"]) as gated,
        GoogleTokenServer(ServiceAccount.generate()) as tokens,
        ScriptedBedrock() as bedrock,
        ScriptedVertex(tokens) as vertex,
        ScriptedAzure(AZURE_KEY) as azure,
    ):
        key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
        urls = {"aws": bedrock.base_url, "gcp": vertex.base_url, "az": azure.base_url}
        with run_proxy(config(urls, key_file, calc, gated), directory) as proxy:
            yield World(proxy, bedrock, vertex, azure, servers)


@pytest.fixture
def client(world: World) -> openai.OpenAI:
    for upstream in (world.bedrock, world.vertex, world.azure):
        upstream.reset()
    for server in world.servers.values():
        server.methods.clear()
        server.headers.clear()
    SCRIPT.reset()
    return sdk_client(world.proxy)


# --- each upstream's own shapes ----------------------------------------------------------------


def converse_blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [block[kind] for msg in body["messages"] for block in msg["content"] if kind in block]


def offered_to(model: str, body: dict[str, Any]) -> list[str]:
    if model == "claude-bedrock":
        return [
            tool["toolSpec"]["name"] for tool in body["toolConfig"]["tools"] if "toolSpec" in tool
        ]
    return offered(SHAPE[model], body)


def told_to(model: str, body: dict[str, Any], name: str) -> tuple[list[str], str | None]:
    """The calls the model made and the result it was given, in its upstream's shape; a
    Converse toolResult for its toolUse's id, a Gemini call with its signature back."""
    if model == "claude-bedrock":
        uses = converse_blocks(body, "toolUse")
        results = converse_blocks(body, "toolResult")
        assert [r["toolUseId"] for r in results] == [u["toolUseId"] for u in uses], body
        assert all(r.get("status", "success") == "success" for r in results), results
        return [use["name"] for use in uses], tool_result(body["messages"])
    if model == "gemini-vertex":
        parts = [part for content in body["contents"] for part in content["parts"]]
        signed = [part.get("thoughtSignature") for part in parts if "functionCall" in part]
        assert signed == [SIGNATURE] * len(signed), parts
    return told(SHAPE[model], body, name)


def check_upstream(world: World, model: str, label: str, rounds: int = 2) -> None:
    """Round 1 offered every MCP tool; the last round had the call and its result."""
    bodies = world.bodies(model)
    assert len(bodies) == rounds
    assert offered_to(model, bodies[0]) == [f"{label}__{tool}" for tool in TOOLS]
    calls, result = told_to(model, bodies[-1], f"{label}__add")
    assert calls == [f"{label}__add"]
    assert result is not None
    assert "5" in result


# --- each cloud model, stream and not ----------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", MODELS)
def test_each_cloud_runs_the_tool_and_answers(
    world: World, client: openai.OpenAI, model: str, stream: bool
) -> None:
    SCRIPT.calls = [("calc__add", {"a": 2, "b": 3})]
    response = answer(client, stream, model=model, input="2+3?", tools=[mcp_tool("calc")])
    check_ran(response, "calc", 2, model)
    usage = response["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    check_upstream(world, model, "calc")
    assert world.servers["calc"].listings() == 1, world.servers["calc"].methods
    assert world.servers["calc"].count("tools/call") == 1


# --- approvals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", ["claude-bedrock", "gemini-vertex"])
def test_approved_call_runs_once(
    world: World, client: openai.OpenAI, model: str, stream: bool
) -> None:
    """require_approval defaults to always: the call waits as an mcp_approval_request; the
    approval (previous_response_id) runs the stored call once and the model gets its result."""
    SCRIPT.calls = [("gated__add", {"a": 2, "b": 3})]
    turn = {"model": model, "tools": [mcp_tool("gated")]}
    first = answer(client, stream, input="2+3?", **turn)
    check_response(first)
    assert [i["type"] for i in first["output"]] == ["mcp_list_tools", "mcp_approval_request"]
    asked = first["output"][1]
    assert (asked["server_label"], asked["name"]) == ("gated", "add")
    assert json.loads(asked["arguments"]) == {"a": 2, "b": 3}
    gated = world.servers["gated"]
    assert gated.count("tools/call") == 0
    assert len(world.bodies(model)) == 1
    second = answer(
        client, stream, previous_response_id=first["id"], input=[approval(asked["id"], True)],
        **turn,
    )  # fmt: skip
    check_response(second)
    assert [i["type"] for i in second["output"]] == ["mcp_call", "message"]
    call, said = second["output"]
    assert call["approval_request_id"] == asked["id"]
    assert call["arguments"] == asked["arguments"]
    assert (call["status"], call["output"], call["error"]) == ("completed", "5", None)
    assert said["content"][0]["text"] == "RESULT: " + tool_result_of(world, model)
    assert (gated.count("tools/call"), gated.listings()) == (1, 1)  # the list was reused
    check_upstream(world, model, "gated")


def tool_result_of(world: World, model: str) -> str:
    """The result the upstream was given last (the scripted model answers with it)."""
    body = world.bodies(model)[-1]
    result = tool_result(body["messages" if "messages" in body else "contents"])
    assert result is not None
    return result
