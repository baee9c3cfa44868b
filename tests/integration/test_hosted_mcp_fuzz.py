"""Any POST /v1/responses body with hosted `mcp` tools, however malformed, through the
in-process app with a real MCP server configured (tests/helpers/mcp_servers.py) and an
openai-kind upstream that calls one of the MCP tools it is offered: `mcp` tools with every
field missing, wrong-typed or odd, tool_choice `{type: mcp}`, max_tool_calls, and inputs
holding mcp_list_tools / mcp_call / mcp_approval_request / mcp_approval_response items, valid
and not, with known and unknown ids; streamed and not. The answer is never a 5xx, every error
is OpenAI's shape, a stream that began ends with exactly one terminal event and sequence
numbers 0..n, and no header value, configured or sent, is ever in an answer (CONTRACT.md,
"MCP"). The defects it found are kept as the tests at the end (each a 500 or a misnamed
param before its fix)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.mcp_servers import http_app
from tests.helpers.mcp_servers import serve as serve_mcp
from tests.integration.conftest import make_config, raw_config, serve
from tests.integration.test_responses_fuzz import check_error, content, fields, junk, maybe, mostly

CONFIGURED_SECRET = "conf-hdr-SECRET-0001"
SENT_SECRETS = ("req-hdr-SECRET-0002", "req-hdr-SECRET-0003", "auth-SECRET-0004")
TERMINAL = ("response.completed", "response.incomplete", "response.failed")
STATUSES: list[int] = []


def upstream(request: httpx.Request) -> httpx.Response:
    """A model that calls the first MCP tool it is offered (`add` when it can, never `header`,
    which would answer a header back) until a tool result is in the conversation."""
    body = json.loads(request.content)
    offered = [tool["function"]["name"] for tool in body.get("tools") or ()]
    mcp = [name for name in offered if "__" in name and not name.endswith("__header")]
    mcp.sort(key=lambda name: not name.endswith("__add"))
    answered = any(message["role"] == "tool" for message in body["messages"])
    message: dict[str, Any]
    if mcp and not answered:
        arguments = '{"a": 2, "b": 3, "text": "hi", "seconds": 0}'
        function = {"name": mcp[0], "arguments": arguments}
        call = {"id": "call_1", "type": "function", "function": function}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "Done."}, "stop"
    if body.get("stream"):
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=chunks_of(message, finish)
        )
    return httpx.Response(200, json=completion(message, finish))


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chunks_of(message: dict[str, Any], finish: str) -> str:
    """The same answer as a chat stream: one delta, the finish, the usage."""
    base = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    frames = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": completion(message, finish)["usage"]},
    ]
    return "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"


# -- strategies ----------------------------------------------------------------------------

labels = st.sampled_from(["calc", "calc", "calc", "remote", "nope", ""])
tool_names = st.sampled_from(["add", "echo", "fail", "slow", "header", "zzz"])
names_list = st.lists(tool_names, max_size=3)
secret_values = st.sampled_from(SENT_SECRETS)
header_maps = st.dictionaries(
    st.sampled_from(["X-Api-Key", "X-Conf", "Authorization", "x-trace"]), secret_values, max_size=2
)
tool_filter = fields({}, {"tool_names": names_list, "read_only": st.booleans()})
approval = st.one_of(
    st.sampled_from(["always", "never", "sometimes"]),
    fields({}, {"always": tool_filter, "never": tool_filter}),
)


def mcp_tool(server_url: str) -> st.SearchStrategy[dict[str, Any]]:
    """An `mcp` tool: a configured label, or the allowed URL (or one that is not)."""
    urls = st.sampled_from(
        [
            server_url,
            server_url,
            server_url,
            "http://169.254.169.254/latest",
            "http://127.0.0.1:1/x",
        ]
    )
    return fields(
        {"type": st.just("mcp"), "server_label": labels},
        {
            "server_url": urls,
            "headers": header_maps,
            "authorization": st.sampled_from([SENT_SECRETS[2], ""]),
            "allowed_tools": st.one_of(names_list, tool_filter),
            "require_approval": approval,
            "connector_id": st.sampled_from(["connector_gmail", None, None, None]),
            "server_description": st.text(max_size=8),
        },
    )


item_ids = st.sampled_from(["mcpr_1", "mcpr_2", "mcp_1", "unknown", ""])
arguments = st.sampled_from(['{"a": 1, "b": 2}', "{}", "not json", "[1]", ""])
listed_tool = fields(
    {"name": tool_names},
    {
        "description": st.text(max_size=6),
        "input_schema": st.just({"type": "object", "properties": {"a": {"type": "integer"}}}),
        "annotations": st.just({"readOnlyHint": True}),
    },
)
error_object = st.one_of(
    fields({"type": st.just("mcp_tool_execution_error"), "content": st.just([])}),
    fields({"type": st.just("http_error"), "code": st.integers(0, 600), "message": st.text()}),
)
mcp_items = st.one_of(
    fields(
        {"type": st.just("mcp_list_tools"), "server_label": labels, "tools": st.lists(listed_tool)},
        {"id": st.just("mcpl_1"), "error": st.none()},
    ),
    fields(
        {
            "type": st.just("mcp_call"),
            "id": item_ids,
            "server_label": labels,
            "name": tool_names,
            "arguments": arguments,
        },
        {
            "output": st.text(max_size=6),
            "error": error_object,
            "status": st.sampled_from(["completed", "failed", "in_progress"]),
            "approval_request_id": item_ids,
        },
    ),
    fields(
        {
            "type": st.just("mcp_approval_request"),
            "id": item_ids,
            "server_label": labels,
            "name": tool_names,
            "arguments": arguments,
        }
    ),
    fields(
        {
            "type": st.just("mcp_approval_response"),
            "approval_request_id": item_ids,
            "approve": st.booleans(),
        },
        {"reason": st.text(max_size=6), "id": st.just("mcpa_1")},
    ),
)
user = fields({"role": st.just("user"), "content": content}, {"type": st.just("message")})
function_tool = st.just(
    {"type": "function", "name": "calc__add", "parameters": {"type": "object", "properties": {}}}
)


def bodies(server_url: str) -> st.SearchStrategy[Any]:
    tools = st.lists(
        mostly(mcp_tool(server_url), st.one_of(function_tool, junk)), min_size=1, max_size=3
    )
    choice = st.one_of(
        st.sampled_from(["auto", "required", "none"]),
        fields({"type": st.just("mcp"), "server_label": labels}, {"name": tool_names}),
    )
    inputs = st.one_of(
        st.text(max_size=6),
        st.tuples(user, st.lists(mostly(mcp_items, junk), max_size=4)).map(
            lambda pair: [pair[0], *pair[1]]
        ),
    )
    ordinary = st.fixed_dictionaries(
        {"model": st.just("mini"), "input": maybe(inputs), "tools": tools},
        optional={
            "tool_choice": maybe(choice),
            "max_tool_calls": maybe(st.integers(-1, 3)),
            "stream": st.booleans(),
            "store": st.booleans(),
        },
    )
    return mostly(ordinary, junk)


# -- invariants ----------------------------------------------------------------------------


def check_stream(answer: httpx.Response) -> None:
    events = [
        json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")
    ]
    assert events, answer.text
    assert events[0]["type"] == "response.created", events[0]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    terminal = [event["type"] for event in events if event["type"] in TERMINAL]
    assert len(terminal) == 1, terminal
    assert events[-1]["type"] in TERMINAL, events[-1]


def check_answer(answer: httpx.Response, body: Any) -> None:
    shown = answer.text + "\n" + "\n".join(f"{n}: {v}" for n, v in answer.headers.items())
    for secret in (CONFIGURED_SECRET, *SENT_SECRETS):
        assert secret not in shown, f"a header value in an answer: {shown[:600]}"
    if answer.status_code != 200:
        check_error(answer)
    elif answer.headers["content-type"].startswith("text/event-stream"):
        check_stream(answer)
    else:
        assert answer.json()["object"] == "response"


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_mcp(http_app("stateless")) as url:
        yield url


def proxy_config(mcp_url: str) -> Any:
    raw = raw_config()
    raw["models"] = [model for model in raw["models"] if model["name"] == "mini"]
    raw["mcp"] = {
        "servers": {"calc": {"url": mcp_url, "headers": {"X-Conf": CONFIGURED_SECRET}}},
        "remote_urls": [mcp_url.removesuffix("/mcp") + "/*"],
    }
    return make_config(raw)


def test_no_mcp_body_is_a_5xx_or_leaks_a_header(mcp_url: str) -> None:
    """The proxy's lifespan (its MCP client pool's task groups) is entered and left in one
    task; hypothesis drives the examples from a thread, each request run on that loop."""
    STATUSES.clear()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with serve(proxy_config(mcp_url), transport=httpx.MockTransport(upstream)) as client:

            @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
            @given(body=bodies(mcp_url))
            def send(body: Any) -> None:
                encoded = json.dumps(body).encode()  # not always an object, nor always JSON
                post = client.post(
                    "/v1/responses", content=encoded, headers={"content-type": "application/json"}
                )
                answer = asyncio.run_coroutine_threadsafe(post, loop).result()
                STATUSES.append(answer.status_code)
                check_answer(answer, body)

            await asyncio.to_thread(send)

    asyncio.run(main())
    # Mostly well-formed bodies: a fair share must have run the loop, not been refused.
    assert STATUSES.count(200) >= len(STATUSES) // 10, STATUSES


# -- defects found: each pinned by one body ------------------------------------------------

USER = {"role": "user", "content": "hi"}
CALC = [{"type": "mcp", "server_label": "calc", "require_approval": "never"}]
REQUEST = {"type": "mcp_approval_request", "server_label": "calc", "name": "add", "arguments": "{}"}


async def post_once(mcp_url: str, body: dict[str, Any]) -> httpx.Response:
    async with serve(proxy_config(mcp_url), transport=httpx.MockTransport(upstream)) as client:
        return await client.post("/v1/responses", json=body)


@pytest.mark.anyio
async def test_an_approval_request_without_an_id_is_a_400(mcp_url: str) -> None:
    body = {"model": "mini", "input": [USER, REQUEST], "tools": CALC}
    answer = await post_once(mcp_url, body)
    check_error(answer)
    assert answer.status_code == 400


@pytest.mark.anyio
async def test_an_approval_request_whose_id_is_a_list_is_a_400(mcp_url: str) -> None:
    body = {"model": "mini", "input": [USER, {**REQUEST, "id": ["mcpr_1"]}], "tools": CALC}
    answer = await post_once(mcp_url, body)
    check_error(answer)
    assert answer.status_code == 400


@pytest.mark.anyio
async def test_an_mcp_call_whose_approval_request_id_is_a_list_is_a_400(mcp_url: str) -> None:
    call = {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "calc",
        "name": "add",
        "arguments": "{}",
        "output": "3",
        "approval_request_id": ["mcpr_1"],
    }
    answer = await post_once(mcp_url, {"model": "mini", "input": [USER, call], "tools": CALC})
    check_error(answer)
    assert answer.status_code == 400


@pytest.mark.anyio
async def test_an_item_whose_type_is_a_list_is_a_400(mcp_url: str) -> None:
    item = {"role": "user", "content": "", "type": []}
    answer = await post_once(mcp_url, {"model": "mini", "input": [item], "tools": CALC})
    check_error(answer)
    assert answer.status_code == 400


@pytest.mark.anyio
async def test_an_approved_request_with_arguments_not_a_string_names_the_input(
    mcp_url: str,
) -> None:
    request = {**REQUEST, "id": "mcpr_1", "arguments": 5}
    response = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
    body = {"model": "mini", "input": [USER, request, response], "tools": CALC}
    answer = await post_once(mcp_url, body)
    check_error(answer)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"].startswith("input"), answer.text
