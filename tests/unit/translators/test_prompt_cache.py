"""Prompt-cache breakpoints on the explicit kinds (CONTRACT.md, "Prompt caching"): the
automatic ones, the client's own, the limit of 4, and Claude Code's billing line."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators.anthropic.request import build_request as anthropic_request
from app.translators.base import Target
from app.translators.bedrock.request import build_request as bedrock_request
from app.translators.prompt_cache import without_billing_message
from app.translators.vertex import claude_request
from tests.helpers import bedrock_rules

ANTHROPIC = Target("m", "an", ProviderConfig(kind="anthropic", api_key="k"), "claude-sonnet-4-5")
VERTEX = Target(
    "m", "gcp", ProviderConfig(kind="vertex", project="p", region="us-east5"), "claude-sonnet-4-5"
)
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK = Target("m", "aws", ProviderConfig(kind="bedrock", region="us-east-1"), BEDROCK_MODEL)
EPHEMERAL = {"type": "ephemeral"}
POINT = {"cachePoint": {"type": "default"}}
BILLING = "x-anthropic-billing-header: cc_version=2.1.40.abc; cc_entrypoint=cli; cch=1f2e3;"


def tool(name: str, **more: Any) -> dict[str, Any]:
    function = {"name": name, "parameters": {"type": "object", "properties": {}}}
    return {"type": "function", "function": function, **more}


TOOLS = [tool("read"), tool("write")]
LOOP = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Fix the bug."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "def f(): pass"},
]


def wire(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": LOOP, "tools": TOOLS, **fields}


def anthropic_body(target: Target = ANTHROPIC, **fields: Any) -> dict[str, Any]:
    built = anthropic_request(parse_chat_request(orjson.dumps(wire(**fields))), target)
    body: dict[str, Any] = orjson.loads(built.body)
    return body


def bedrock_body(target: Target = BEDROCK, **fields: Any) -> dict[str, Any]:
    built = bedrock_request(parse_chat_request(orjson.dumps(wire(**fields))), target)
    body: dict[str, Any] = orjson.loads(built.body)
    assert bedrock_rules.request_problem(target.upstream_model, body, stream=False) is None
    return body


def marked(blocks: list[dict[str, Any]]) -> list[int]:
    return [i for i, block in enumerate(blocks) if "cache_control" in block]


def test_anthropic_auto_marks_the_last_tool_system_block_and_message_block() -> None:
    body = anthropic_body()
    assert marked(body["tools"]) == [1]
    assert body["system"][-1]["cache_control"] == EPHEMERAL
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    every = [*body["tools"], *body["system"], *(b for m in body["messages"] for b in m["content"])]
    assert sum("cache_control" in block for block in every) == 3


def test_vertex_claude_auto_marks_the_same_blocks() -> None:
    built = claude_request(parse_chat_request(orjson.dumps(wire())), VERTEX)
    body = orjson.loads(built.body)
    assert marked(body["tools"]) == [1]
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL


def test_off_adds_none() -> None:
    off = Target("m", "an", ANTHROPIC.provider, "claude-sonnet-4-5", prompt_cache="off")
    assert b"cache_control" not in orjson.dumps(anthropic_body(off))
    off_bedrock = Target("m", "aws", BEDROCK.provider, BEDROCK_MODEL, prompt_cache="off")
    assert b"cachePoint" not in orjson.dumps(bedrock_body(off_bedrock))


def test_the_clients_own_breakpoints_go_to_the_same_block_ttl_kept_and_none_added() -> None:
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    system = {
        "role": "system",
        "content": [{"type": "text", "text": "You are an agent.", "cache_control": one_hour}],
    }
    body = anthropic_body(messages=[system, *LOOP[1:]], tools=[tool("read"), tool("write")])
    assert body["system"] == [
        {"type": "text", "text": "You are an agent.", "cache_control": one_hour}
    ]
    assert b"cache_control" not in orjson.dumps({k: body[k] for k in ("tools", "messages")})
    tools = [tool("read", cache_control={"type": "ephemeral"}), tool("write")]
    body = anthropic_body(tools=tools)
    assert marked(body["tools"]) == [0]
    assert body["messages"][-1]["content"][-1].get("cache_control") is None


def test_bedrock_auto_puts_a_cache_point_after_the_last_tool_system_block_and_message_block() -> (
    None
):
    body = bedrock_body()
    assert body["toolConfig"]["tools"][-1] == POINT
    assert body["system"][-1] == POINT
    assert body["messages"][-1]["content"][-1] == POINT
    assert orjson.dumps(body).count(b"cachePoint") == 3


def test_bedrock_takes_the_clients_breakpoints_on_tools_parts_and_tool_results() -> None:
    tools = [tool("read", cache_control={"type": "ephemeral", "ttl": "1h"}), tool("write")]
    result = {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "ok", "cache_control": {"type": "ephemeral"}}],
    }
    body = bedrock_body(tools=tools, messages=[*LOOP[:3], result])
    specs = body["toolConfig"]["tools"]
    assert specs[1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert "cachePoint" not in specs[-1]
    assert body["messages"][-1]["content"][-1] == POINT
    assert orjson.dumps(body).count(b"cachePoint") == 2


def test_bedrock_models_without_prompt_caching_get_no_automatic_cache_point() -> None:
    llama = Target("m", "aws", BEDROCK.provider, "meta.llama3-70b-instruct-v1:0")
    built = bedrock_request(parse_chat_request(orjson.dumps(wire())), llama)
    assert b"cachePoint" not in built.body


@pytest.mark.parametrize("build", [anthropic_request, bedrock_request])
def test_more_than_four_is_a_400_naming_the_fifth_in_prompt_order(build: Any) -> None:
    control = {"type": "ephemeral"}
    tools = [tool("read", cache_control=control), tool("write", cache_control=control)]
    parts = [{"type": "text", "text": f"part {n}", "cache_control": control} for n in range(3)]
    messages = [*LOOP, {"role": "user", "content": parts}]
    target = ANTHROPIC if build is anthropic_request else BEDROCK
    request = parse_chat_request(orjson.dumps(wire(tools=tools, messages=messages)))
    with pytest.raises(InvalidRequest) as caught:
        build(request, target)
    assert caught.value.status == 400
    assert caught.value.param == "messages[4].content[2].cache_control"


def test_the_billing_line_is_removed_for_every_kind_but_anthropic() -> None:
    system = {"role": "system", "content": f"{BILLING}\nYou are Claude Code."}
    messages = [system, *LOOP[1:]]
    kept = anthropic_body(messages=messages)
    assert kept["system"][0]["text"].startswith(BILLING)
    built = claude_request(parse_chat_request(orjson.dumps(wire(messages=messages))), VERTEX)
    assert orjson.loads(built.body)["system"][0]["text"] == "You are Claude Code."
    assert bedrock_body(messages=messages)["system"][0] == {"text": "You are Claude Code."}
    alone = [{"role": "system", "content": BILLING}, *LOOP]
    assert bedrock_body(messages=alone)["system"][0] == {"text": "You are an agent."}


def test_the_same_request_gives_the_same_bytes() -> None:
    for build, target in ((anthropic_request, ANTHROPIC), (bedrock_request, BEDROCK)):
        first = build(parse_chat_request(orjson.dumps(wire())), target).body
        assert build(parse_chat_request(orjson.dumps(wire())), target).body == first


BILLING = "x-anthropic-billing-header: cc_version=2.1.197; cch=0a1b2;"


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (
            {"role": "system", "content": f"{BILLING}\nBe brief."},
            {"role": "system", "content": "Be brief."},
        ),
        (
            {
                "role": "developer",
                "content": [{"type": "text", "text": BILLING}, {"type": "text", "text": "B"}],
            },
            {"role": "developer", "content": [{"type": "text", "text": "B"}]},
        ),
        ({"role": "system", "content": "Be brief."}, None),
        ({"role": "user", "content": BILLING}, None),
        ({"role": "system", "content": None}, None),
    ],
)
def test_a_chat_wires_billing_line_is_left_out(first: dict[str, Any], expected: Any) -> None:
    messages = [first, {"role": "user", "content": "hi"}]
    cleaned = without_billing_message(messages)
    assert cleaned == (None if expected is None else [expected, messages[1]])
    assert messages[0] == first  # the client's request is not changed
