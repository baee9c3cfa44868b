"""JSON nested past MAX_JSON_DEPTH is a 400 at the edge, in the path's API shape, naming where
the limit was passed, on every upstream kind and both client APIs; JSON at the limit reaches
the upstream (issue 20: orjson parses 1024 levels but serialises only 254, so a body between
the two used to pass the edge and fail on the way out as a 500)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
import respx

from app.json_depth import MAX_JSON_DEPTH
from tests.helpers.mock_gemini import gemini_answer
from tests.helpers.upstream_answers import anthropic_tool_message, openai_tool_completion
from tests.integration.conftest import (
    ANTHROPIC_URL,
    CLIENT_KEY,
    GEMINI_KEY,
    OPENAI_URL,
    assert_error,
    make_config,
    raw_config,
    serve,
)

pytestmark = pytest.mark.anyio

GEMINI_BASE = "http://gemini.upstream.test"
GEMINI_URL = f"{GEMINI_BASE}/v1beta/models/gemini-2.5-flash:generateContent"
KINDS = {"openai": "mini", "anthropic": "claude", "gemini": "gemini"}
ACCEPTED = [MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH]
REFUSED = [MAX_JSON_DEPTH + 1, 300, 600, 900, 1100]  # 1100: past what orjson even parses
PLACEHOLDER = "@DEEP@"


def deep_json(levels: int, keys: Sequence[str] = ("a",), lead: str = "") -> str:
    """JSON text `levels` deep: objects keyed by `keys` in turn, `lead` before each key that
    is keys[0] (e.g. a schema's `"type":"object",`), an empty object innermost. Written as
    text: neither orjson (254 levels) nor json (the recursion limit) could dump it."""
    opens = []
    for level in range(levels - 1):
        key = keys[level % len(keys)]
        opens.append("{" + (lead if key == keys[0] else "") + f'"{key}":')
    return "".join(opens) + "{}" + "}" * (levels - 1)


@dataclass(frozen=True)
class Case:
    """A body with a deep value at `prefix` (each segment one level down from the body);
    `text` puts the value in as JSON text (a tool call's arguments), not as JSON."""

    build: Callable[[], dict[str, Any]]
    prefix: tuple[str | int, ...]
    keys: tuple[str, ...] = ("a",)
    lead: str = ""
    text: bool = False

    def body(self, depth: int) -> bytes:
        levels = depth - len(self.prefix)  # the body is level 1, the value's root one below
        deep = deep_json(levels, self.keys, self.lead)
        wire = orjson.dumps(self.build())
        if self.text:
            return wire.replace(f'"{PLACEHOLDER}"'.encode(), orjson.dumps(deep))
        return wire.replace(f'"{PLACEHOLDER}"'.encode(), deep.encode())

    def param(self, style: str) -> str:
        """Where the limit is passed: the string, for JSON text; else the first container
        past the limit, MAX_JSON_DEPTH segments down."""
        path: list[str | int] = list(self.prefix)
        if not self.text:
            path += [self.keys[i % len(self.keys)] for i in range(MAX_JSON_DEPTH - len(path))]
        if style == "dotted":
            return ".".join(str(part) for part in path)
        text = ""
        for part in path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text


def _chat(model: str, **fields: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **fields}


def _chat_arguments(model: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": PLACEHOLDER}}
    return {
        "model": model,
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "user", "content": "y"},
        ],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }


def _chat_tools(model: str) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "f", "parameters": PLACEHOLDER}}
    return _chat(model, tools=[tool])


def _chat_content_part(model: str) -> dict[str, Any]:
    part = {"type": "text", "text": "hi", "x_deep": PLACEHOLDER}
    return {"model": model, "messages": [{"role": "user", "content": [part]}]}


SCHEMA = {"keys": ("properties", "a"), "lead": '"type":"object",'}
CHAT_CASES: dict[str, Callable[[str], Case]] = {
    "arguments": lambda model: Case(
        lambda: _chat_arguments(model),
        ("messages", 0, "tool_calls", 0, "function", "arguments"),
        text=True,
    ),
    "parameters": lambda model: Case(
        lambda: _chat_tools(model), ("tools", 0, "function", "parameters"), **SCHEMA
    ),
    "unknown-field": lambda model: Case(lambda: _chat(model, x_deep=PLACEHOLDER), ("x_deep",)),
    "content-part": lambda model: Case(
        lambda: _chat_content_part(model), ("messages", 0, "content", 0, "x_deep")
    ),
}
# What a translated kind refuses by name whatever its depth: an unknown top-level field.
KIND_REFUSALS = {("unknown-field", "anthropic"), ("unknown-field", "gemini")}


def _messages(model: str, **fields: Any) -> dict[str, Any]:
    user = {"role": "user", "content": "hi"}
    return {"model": model, "max_tokens": 64, "messages": [user], **fields}


def _messages_tool_use(model: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": PLACEHOLDER}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    return _messages(
        model,
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
        tools=[{"name": "f", "input_schema": {"type": "object"}}],
    )


MESSAGES_CASES: dict[str, Callable[[str], Case]] = {
    "tool-use-input": lambda model: Case(
        lambda: _messages_tool_use(model), ("messages", 1, "content", 0, "input")
    ),
    "input-schema": lambda model: Case(
        lambda: _messages(model, tools=[{"name": "f", "input_schema": PLACEHOLDER}]),
        ("tools", 0, "input_schema"),
        **SCHEMA,
    ),
    "metadata": lambda model: Case(lambda: _messages(model, metadata=PLACEHOLDER), ("metadata",)),
}


@pytest.fixture
async def proxy(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": GEMINI_KEY}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as client:
        yield client


def _upstreams(upstream: respx.Router) -> list[respx.Route]:
    return [
        upstream.post(OPENAI_URL).respond(json=openai_tool_completion()),
        upstream.post(ANTHROPIC_URL).respond(json=anthropic_tool_message()),
        upstream.post(GEMINI_URL).respond(json=gemini_answer([{"text": "ok"}])),
    ]


async def _post(proxy: httpx.AsyncClient, path: str, body: bytes) -> httpx.Response:
    headers = {"content-type": "application/json", "x-api-key": CLIENT_KEY}
    return await proxy.post(path, content=body, headers=headers)


def _assert_anthropic_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"type", "error"}
    assert body["type"] == "error"
    assert set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == "invalid_request_error"
    message: str = body["error"]["message"]
    return message


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CHAT_CASES)
@pytest.mark.parametrize("depth", REFUSED)
async def test_chat_body_past_the_limit_is_a_400_naming_where(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str, case: str, depth: int
) -> None:
    routes = _upstreams(upstream)
    deep = CHAT_CASES[case](KINDS[kind])

    response = await _post(proxy, "/v1/chat/completions", deep.body(depth))

    error = assert_error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == deep.param("openai")
    assert f"at most {MAX_JSON_DEPTH} levels" in error["message"]
    assert not any(route.called for route in routes)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CHAT_CASES)
@pytest.mark.parametrize("depth", ACCEPTED)
async def test_chat_body_at_the_limit_reaches_the_upstream(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str, case: str, depth: int
) -> None:
    routes = _upstreams(upstream)
    deep = CHAT_CASES[case](KINDS[kind])

    response = await _post(proxy, "/v1/chat/completions", deep.body(depth))

    if (case, kind) in KIND_REFUSALS:
        error = assert_error(response, 400)
        assert error["param"] == deep.prefix[0]
        assert "levels" not in error["message"]
        return
    assert response.status_code == 200, response.text
    assert sum(route.call_count for route in routes) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", MESSAGES_CASES)
@pytest.mark.parametrize("depth", REFUSED)
async def test_messages_body_past_the_limit_is_a_400_naming_where(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str, case: str, depth: int
) -> None:
    routes = _upstreams(upstream)
    deep = MESSAGES_CASES[case](KINDS[kind])

    response = await _post(proxy, "/v1/messages", deep.body(depth))

    message = _assert_anthropic_error(response, 400)
    assert message.startswith(f"{deep.param('dotted')}: nested too deeply")
    assert not any(route.called for route in routes)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", MESSAGES_CASES)
@pytest.mark.parametrize("depth", ACCEPTED)
async def test_messages_body_at_the_limit_reaches_the_upstream(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str, case: str, depth: int
) -> None:
    routes = _upstreams(upstream)
    deep = MESSAGES_CASES[case](KINDS[kind])

    response = await _post(proxy, "/v1/messages", deep.body(depth))

    assert response.status_code == 200, response.text
    assert sum(route.call_count for route in routes) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_count_tokens_refuses_the_same_bodies(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str
) -> None:
    deep = MESSAGES_CASES["tool-use-input"](KINDS[kind])

    response = await _post(proxy, "/v1/messages/count_tokens", deep.body(300))

    message = _assert_anthropic_error(response, 400)
    assert message.startswith(f"{deep.param('dotted')}: nested too deeply")
