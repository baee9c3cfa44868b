"""Building Anthropic requests from small OpenAI requests, for the anthropic translator tests."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.config import ProviderConfig
from app.errors import InvalidRequest
from app.openai_types import parse_chat_request
from app.translators.anthropic.request import build_request
from app.translators.base import Target, UpstreamRequest

PROVIDER = ProviderConfig(kind="anthropic", base_url="http://up.test/", api_key="sk-ant-1")
# prompt_cache off: these tests compare whole bodies; breakpoints have their own tests
# (tests/unit/translators/test_prompt_cache.py).
TARGET = Target("claude", "an", PROVIDER, "claude-sonnet-4-5", prompt_cache="off")
HELLO = {"role": "user", "content": "hi"}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
PNG = "data:image/png;base64,iVBORw0KGgo="


def send(target: Target = TARGET, **fields: Any) -> UpstreamRequest:
    wire = {"model": "claude", "messages": [HELLO], **fields}
    return build_request(parse_chat_request(orjson.dumps(wire)), target)


def body(**fields: Any) -> dict[str, Any]:
    upstream_body: dict[str, Any] = orjson.loads(send(**fields).body)
    return upstream_body


def refusal(**fields: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        send(**fields)
    assert caught.value.status == 400
    return caught.value


def call(call_id: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


def assistant_calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}
