"""The Messages face and prompt caching (CONTRACT.md, "Prompt caching"): Claude Code's own
breakpoints become cachePoints on bedrock, its billing line is left out for every kind but
anthropic, and other translated kinds get no `cache_control`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from app.config import ProviderConfig
from app.faces.messages.face import MessagesFace
from app.faces.messages.request import chat_request
from app.translators.base import NativeRequest, Target
from app.translators.bedrock.request import build_request as bedrock_request
from app.translators.vertex import claude_passthrough
from tests.helpers import bedrock_rules

RECORDING = Path(__file__).parents[2] / "recordings" / "claude_code" / "tool_result_turn.json"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK = Target("m", "aws", ProviderConfig(kind="bedrock", region="us-east-1"), BEDROCK_MODEL)
OPENAI = Target("m", "oa", ProviderConfig(kind="openai", api_key="k"), "gpt-5")
VERTEX = Target(
    "m", "gcp", ProviderConfig(kind="vertex", project="p", region="us-east5"), "claude-sonnet-4-5"
)
BILLING = "x-anthropic-billing-header:"


def claude_code_body() -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(RECORDING.read_bytes())["body"]
    return body


def to_bedrock(body: dict[str, Any]) -> dict[str, Any]:
    native = NativeRequest(path="/v1/messages", headers={}, body=body)
    request = MessagesFace(native).prepare(chat_request(body), BEDROCK)
    sent: dict[str, Any] = orjson.loads(bedrock_request(request, BEDROCK).body)
    assert bedrock_rules.request_problem(BEDROCK_MODEL, sent, stream=True) is None
    return sent


def test_claude_codes_breakpoints_become_cache_points_on_bedrock_without_the_billing_line() -> None:
    body = claude_code_body()
    marks = [block for block in body["system"] if "cache_control" in block]
    sent = to_bedrock(body)
    assert BILLING.encode() not in orjson.dumps(sent)
    assert sum("cachePoint" in block for block in sent["system"]) == len(marks)
    assert sent["messages"][-1]["content"][-1] == {"cachePoint": {"type": "default"}}
    assert "cachePoint" not in sent["toolConfig"]["tools"][-1]  # the client chose its own


def test_without_breakpoints_bedrock_gets_the_automatic_ones() -> None:
    body = orjson.loads(orjson.dumps(claude_code_body()).replace(b'"cache_control"', b'"_cc"'))
    for block in body["system"]:
        block.pop("_cc", None)
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            block.pop("_cc", None)
    sent = to_bedrock(body)
    assert orjson.dumps(sent).count(b"cachePoint") == 3
    assert sent["toolConfig"]["tools"][-1] == {"cachePoint": {"type": "default"}}


def test_the_same_body_with_another_billing_hash_reaches_bedrock_as_the_same_bytes() -> None:
    first, second = claude_code_body(), claude_code_body()
    second["system"][0]["text"] = f"{BILLING} cc_version=2.1.197.999; cch=abcdef;"
    native = NativeRequest(path="/v1/messages", headers={}, body=first)
    sent = [
        bedrock_request(MessagesFace(native).prepare(chat_request(body), BEDROCK), BEDROCK).body
        for body in (first, second)
    ]
    assert sent[0] == sent[1]


def test_other_translated_kinds_get_no_cache_control() -> None:
    body = claude_code_body()
    native = NativeRequest(path="/v1/messages", headers={}, body=body)
    request = MessagesFace(native).prepare(chat_request(body), OPENAI)
    assert b"cache_control" not in orjson.dumps(request.wire)
    assert BILLING.encode() not in orjson.dumps(request.wire)


def test_a_marked_tool_result_is_a_string_again_to_other_kinds() -> None:
    """Claude Code marks its last tool_result block; the mark needs a part to ride on, but an
    openai-kind server gets the result as the string it is unmarked (some take no other)."""
    body = claude_code_body()
    marked = [
        block
        for message in body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else ())
        if block.get("type") == "tool_result" and "cache_control" in block
    ]
    assert marked
    native = NativeRequest(path="/v1/messages", headers={}, body=body)
    request = MessagesFace(native).prepare(chat_request(body), OPENAI)
    tool_contents = [m["content"] for m in request.wire["messages"] if m["role"] == "tool"]
    assert tool_contents
    assert all(isinstance(content, str) for content in tool_contents)


def test_claude_on_vertex_gets_the_body_as_sent_less_the_billing_line() -> None:
    body = claude_code_body()
    native = NativeRequest(path="/v1/messages", headers={}, body=body)
    relayed = claude_passthrough(native).build_request(chat_request(body), VERTEX)
    sent = orjson.loads(relayed.body)
    assert sent["system"] == body["system"][1:]
    assert sent["messages"] == body["messages"]
    assert body["system"][0]["text"].startswith(BILLING)  # the client's body is not changed
