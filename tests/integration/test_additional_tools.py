"""`additional_tools` input items (issue 38): Codex 0.169 sends its tools this way, and no
`tools`, for the newest models of its catalog (tests/recordings/codex/catalog_first_turn.json).
On the openai, anthropic and gemini kinds their tools reach the model as `tools` would, the
model's call comes back as the namespaced `custom_tool_call` Codex offered, the item stays in
the stored input (a `previous_response_id` chain still offers the tools) and is accepted when
Codex sends the whole conversation back with `store: false`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from tests.helpers.gemini_rules import request_problems
from tests.helpers.mock_gemini import gemini_answer, gemini_error
from tests.integration.conftest import (
    ANTHROPIC_URL,
    GEMINI_KEY,
    OPENAI_URL,
    assert_error,
    make_config,
    raw_config,
    sent_json,
    serve,
)

pytestmark = pytest.mark.anyio

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
GEMINI_BASE = "http://gemini.upstream.test"
GEMINI_URL = f"{GEMINI_BASE}/v1beta/models/gemini-2.5-flash:generateContent"
RECORDED = json.loads((RECORDINGS / "codex" / "catalog_first_turn.json").read_text())["body"]
ADDITIONAL = RECORDED["input"][0]
CODEX_TOOLS = {
    f"{space['name']}__{tool['name']}" for space in ADDITIONAL["tools"] for tool in space["tools"]
}
COMMAND = "echo catalog-ok"
CALL_ID = "call_exec_01"


def _openai_answer(_: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps({"input": COMMAND})
    call = {"id": CALL_ID, "type": "function", "function": {"name": "functions__exec"}}
    call["function"]["arguments"] = arguments
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5"} | {
        "choices": [choice],
        "usage": usage,
    }


def _anthropic_answer(_: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": CALL_ID, "name": "functions__exec"}
    block["input"] = {"input": COMMAND}
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [block],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 3},
    }


def _gemini_answer(_: dict[str, Any]) -> dict[str, Any]:
    call = {"functionCall": {"name": "functions__exec", "args": {"input": COMMAND}}}
    return gemini_answer([call])


def _openai_names(sent: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in sent.get("tools", [])}


def _anthropic_names(sent: dict[str, Any]) -> set[str]:
    return {tool["name"] for tool in sent.get("tools", [])}


def _gemini_names(sent: dict[str, Any]) -> set[str]:
    return {d["name"] for tools in sent.get("tools", []) for d in tools["functionDeclarations"]}


Kind = tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]], Callable[..., set[str]]]
KINDS: dict[str, Kind] = {
    "openai": ("mini", OPENAI_URL, _openai_answer, _openai_names),
    "anthropic": ("claude", ANTHROPIC_URL, _anthropic_answer, _anthropic_names),
    "gemini": ("gemini", GEMINI_URL, _gemini_answer, _gemini_names),
}


@pytest.fixture
async def proxy(upstream: respx.Router, anyio_backend: str) -> AsyncIterator[httpx.AsyncClient]:
    raw = raw_config()
    raw["providers"]["gm"] = {"kind": "gemini", "base_url": GEMINI_BASE, "api_key": GEMINI_KEY}
    raw["models"].append({"name": "gemini", "provider": "gm", "model": "gemini-2.5-flash"})
    transport = httpx.MockTransport(upstream.async_handler)
    async with serve(make_config(raw), transport=transport) as client:
        yield client


def _route(upstream: respx.Router, kind: str) -> respx.Route:
    _, url, answer, _ = KINDS[kind]

    def reply(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        if kind == "gemini" and (problems := request_problems(sent, {})):
            return httpx.Response(400, json=gemini_error(400, "INVALID_ARGUMENT", str(problems)))
        return httpx.Response(200, json=answer(sent))

    return upstream.post(url).mock(side_effect=reply)


def _codex_body(model: str, **changes: Any) -> dict[str, Any]:
    body = {**RECORDED, "model": model, "stream": False, **changes}
    body.pop("client_metadata")
    return body


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_codex_catalog_turn_offers_the_items_tools_and_maps_the_call_back(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str
) -> None:
    model, _, _, offered = KINDS[kind]
    route = _route(upstream, kind)

    response = await proxy.post("/v1/responses", json=_codex_body(model))

    assert response.status_code == 200, response.text
    assert offered(sent_json(route)) == CODEX_TOOLS
    [call] = response.json()["output"]
    assert call["type"] == "custom_tool_call"
    assert (call["namespace"], call["name"], call["input"]) == ("functions", "exec", COMMAND)
    assert call["call_id"] == CALL_ID or kind == "gemini"  # Gemini's calls have no ids


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_the_item_stays_in_the_stored_input_and_comes_back_with_store_false(
    proxy: httpx.AsyncClient, upstream: respx.Router, kind: str
) -> None:
    model, _, _, offered = KINDS[kind]
    route = _route(upstream, kind)
    first = await proxy.post("/v1/responses", json=_codex_body(model, store=True))
    assert first.status_code == 200, first.text
    [call] = first.json()["output"]
    result = {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "ok"}

    chained = {"model": model, "previous_response_id": first.json()["id"], "input": [result]}
    second = await proxy.post("/v1/responses", json=chained)
    stored = await proxy.get(f"/v1/responses/{first.json()['id']}/input_items")
    resent = _codex_body(model, input=[*RECORDED["input"], call, result])
    third = await proxy.post("/v1/responses", json=resent)

    assert second.status_code == 200, second.text
    assert third.status_code == 200, third.text
    assert stored.status_code == 200, stored.text
    assert "additional_tools" in {item["type"] for item in stored.json()["data"]}
    for sent in route.calls[1:]:
        assert offered(json.loads(sent.request.content)) == CODEX_TOOLS


async def test_tools_and_additional_tools_are_offered_together_once_each(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    route = _route(upstream, "openai")
    own = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    again = {"type": "additional_tools", "role": "developer", "tools": [ADDITIONAL["tools"][0]]}
    body = _codex_body("mini", tools=[own])
    body["input"] = [*RECORDED["input"], again]

    response = await proxy.post("/v1/responses", json=body)

    assert response.status_code == 200, response.text
    names = [tool["function"]["name"] for tool in sent_json(route)["tools"]]
    assert sorted(names) == sorted({"lookup", *CODEX_TOOLS})


async def test_streamed_call_comes_back_namespaced(
    proxy: httpx.AsyncClient, upstream: respx.Router
) -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5"}
    call = {"index": 0, "id": CALL_ID, "type": "function"}
    call["function"] = {"name": "functions__exec", "arguments": json.dumps({"input": COMMAND})}
    frames = [
        chunk | {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]},
        chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    payload = "".join(f"data: {json.dumps(frame)}\n\n" for frame in frames) + "data: [DONE]\n\n"
    headers = {"content-type": "text/event-stream"}
    upstream.post(OPENAI_URL).mock(return_value=httpx.Response(200, headers=headers, text=payload))

    response = await proxy.post("/v1/responses", json=_codex_body("mini", stream=True))

    assert response.status_code == 200, response.text
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line[:6] == "data: "]
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert [(item["type"], item["namespace"], item["name"]) for item in done] == [
        ("custom_tool_call", "functions", "exec")
    ]


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "additional_tools", "role": "developer"}, "input.0.tools"),
        ({"type": "additional_tools", "role": "developer", "tools": {}}, "input.0.tools"),
        ({"type": "additional_tools", "role": "user", "tools": []}, "input.0.role"),
        ({"type": "additional_tools", "tools": [{"type": "function"}]}, "input.0.tools.0.name"),
    ],
)
async def test_a_malformed_item_is_a_400_naming_it(
    proxy: httpx.AsyncClient, item: dict[str, Any], param: str
) -> None:
    body = {"model": "mini", "input": [item, {"role": "user", "content": "hi"}]}

    error = assert_error(await proxy.post("/v1/responses", json=body), 400)

    assert error["param"] == param
