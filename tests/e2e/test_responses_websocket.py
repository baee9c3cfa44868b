"""The Responses WebSocket transport (CONTRACT.md, "Codex and Claude Code: all of their
protocol") against a real proxy process, with a real WebSocket client (the `websockets`
package, as uvicorn serves it): several responses on one connection, each event checked as on
HTTP (tests/helpers/responses_stream.py); Codex's warm-up answered with no upstream call; a
`store: false` chain by `previous_response_id` on one connection; error frames (an unknown
previous response, an upstream 429, bad messages, a message past max_body_mb), then a success
on the same connection; a stream broken midway ending in `response.failed`; a closed socket
closing the upstream request; a message sent mid-stream answered after it; a bad key refused
at the upgrade with 401."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.conformance.spec import check_response_event, maybe
from tests.e2e.conftest import CLIENT_KEY, SECRETS, RunningProxy, proxy_config, run_proxy
from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.responses_stream import LAST, assert_responses_stream
from tests.helpers.upstream_answers import openai_text_chunks, openai_tool_chunks

pytestmark = pytest.mark.e2e

BETA = {"OpenAI-Beta": "responses_websockets=2026-02-06"}
DEVELOPER = {"type": "message", "role": "developer", "content": "You are a coding agent."}


@pytest.fixture(scope="module")
def upstream() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    upstream: MockUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    with run_proxy(proxy_config(upstream), tmp_path_factory.mktemp("ws")) as running:
        yield running


def socket(proxy: RunningProxy, key: str = CLIENT_KEY) -> ClientConnection:
    url = f"ws://127.0.0.1:{proxy.port}/v1/responses"
    headers = {"Authorization": f"Bearer {key}", **BETA}
    return connect(url, additional_headers=headers, open_timeout=10)


def exchange(ws: ClientConnection, message: dict[str, Any]) -> list[dict[str, Any]]:
    """Sends one message and reads its events up to the last (or the one error frame)."""
    ws.send(json.dumps(message))
    events: list[dict[str, Any]] = []
    while True:
        frame = ws.recv(timeout=20)
        assert isinstance(frame, str), "every event is a text frame"
        for secret in SECRETS:
            assert secret not in frame
        event = json.loads(frame)
        events.append(event)
        if event["type"] in LAST or event["type"] == "error":
            return events


def create(text: str, **fields: Any) -> dict[str, Any]:
    user = {"type": "message", "role": "user", "content": text}
    return {"type": "response.create", "model": "mini", "input": [user], **fields}


def text_reply(*parts: str) -> Reply:
    return Reply(frames=openai_frames(openai_text_chunks(*parts)))


def test_several_responses_on_one_connection_each_event_checked(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(text_reply("Hel", "lo"))
    upstream.add(Reply(frames=openai_frames(openai_tool_chunks())))
    upstream.add(text_reply("bye"))
    with socket(proxy) as ws:
        first = assert_responses_stream(exchange(ws, create("hi")))
        second = assert_responses_stream(exchange(ws, create("call tools")))
        third = assert_responses_stream(exchange(ws, create("and now")))
    assert first["output"][0]["content"][0]["text"] == "Hello"
    assert [item["type"] for item in second["output"]] == ["function_call", "function_call"]
    assert third["output"][0]["content"][0]["text"] == "bye"
    sent = upstream.requests(OPENAI_PATH)
    assert len(sent) == 3
    assert all(request.body["stream"] is True for request in sent)
    assert "generate" not in sent[0].body
    assert "client_metadata" not in sent[0].body


def test_warm_up_has_no_upstream_call_and_starts_a_store_false_chain(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(text_reply("first answer"))
    upstream.add(text_reply("second answer"))
    warm = {"type": "response.create", "model": "mini", "input": [DEVELOPER]}
    warm |= {"generate": False, "store": False, "client_metadata": {"x": "1"}, "tools": []}
    with socket(proxy) as ws:
        events = exchange(ws, warm)
        assert [event["type"] for event in events] == ["response.created", "response.completed"]
        for event in events:
            maybe(check_response_event, event)
        warmed = events[-1]["response"]
        assert warmed["output"] == []
        assert warmed["status"] == "completed"
        assert upstream.requests(OPENAI_PATH) == []
        turn = create("one", previous_response_id=warmed["id"], store=False)
        answered = assert_responses_stream(exchange(ws, turn))
        turn = create("two", previous_response_id=answered["id"], store=False)
        assert_responses_stream(exchange(ws, turn))
    sent = upstream.requests(OPENAI_PATH)
    assert len(sent) == 2
    assert [m["content"] for m in sent[0].body["messages"]] == ["You are a coding agent.", "one"]
    second = [(m["role"], m["content"]) for m in sent[1].body["messages"]]
    assert second == [
        ("developer", "You are a coding agent."),
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
    ]


def test_unknown_previous_response_is_an_error_frame_and_the_connection_stays(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(text_reply("fine"))
    with socket(proxy) as ws:
        turn = create("x", previous_response_id="resp_nothere", store=False)
        (error,) = exchange(ws, turn)
        assert error["type"] == "error"
        assert error["status"] == 400
        assert error["error"]["code"] == "previous_response_not_found"
        assert error["error"]["message"]
        assert_responses_stream(exchange(ws, create("again")))


def test_upstream_failure_before_the_stream_is_an_error_frame(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(Reply(status=429, json={"error": {"message": "slow down", "type": "rate"}}))
    upstream.add(text_reply("ok"))
    with socket(proxy) as ws:
        (error,) = exchange(ws, create("x"))
        assert error["type"] == "error"
        assert error["status"] == 429
        assert set(error["error"]) >= {"message", "type"}
        assert exchange(ws, create("y"))[-1]["type"] == "response.completed"


@pytest.mark.parametrize(
    "message",
    [
        "not json",
        "[1, 2]",
        '{"type": "session.update"}',
        '{"type": "response.create"}',
        '{"type": "response.create", "model": "mini", "input": 5}',
        '{"type": "response.create", "model": "mini", "generate": "no"}',
        '{"type": "response.create", "model": "nope", "input": "x"}',
    ],
)
def test_bad_messages_are_error_frames(
    proxy: RunningProxy, upstream: MockUpstream, message: str
) -> None:
    upstream.add(text_reply("ok"))
    with socket(proxy) as ws:
        ws.send(message)
        error = json.loads(ws.recv(timeout=20))
        assert error["type"] == "error", error
        assert 400 <= error["status"] < 500, error
        assert error["error"]["message"]
        assert exchange(ws, create("y"))[-1]["type"] == "response.completed"


def test_response_processed_needs_no_answer(proxy: RunningProxy, upstream: MockUpstream) -> None:
    upstream.add(text_reply("ok"))
    with socket(proxy) as ws:
        ws.send(json.dumps({"type": "response.processed", "response_id": "resp_1"}))
        assert exchange(ws, create("y"))[0]["type"] == "response.created"


@pytest.mark.parametrize("key", ["wrong-key", ""])
def test_a_bad_key_is_refused_at_the_upgrade_with_401(proxy: RunningProxy, key: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        socket(proxy, key)
    response = refused.value.response
    assert response.status_code == 401
    assert (
        json.loads(response.body)["error"]["type"] == "invalid_request_error"
        or json.loads(response.body)["error"]["code"]
    )


def test_a_stream_broken_midway_is_response_failed_and_the_connection_stays(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(Reply(frames=openai_frames(openai_text_chunks("a", "b", "c", "d")), drop_after=3))
    upstream.add(text_reply("ok"))
    with socket(proxy) as ws:
        events = exchange(ws, create("x"))
        assert events[-1]["type"] == "response.failed"
        assert_responses_stream(events)
        assert exchange(ws, create("y"))[-1]["type"] == "response.completed"


def test_closing_the_socket_mid_stream_closes_the_upstream_request(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(Reply(frames=openai_frames(openai_text_chunks("a", "b", "c")), hang_after=2))
    with socket(proxy) as ws:
        ws.send(json.dumps(create("x")))
        assert json.loads(ws.recv(timeout=20))["type"] == "response.created"
    (sent,) = upstream.requests(OPENAI_PATH)
    assert sent.closed.wait(timeout=10), "the proxy kept the upstream request open"


def test_a_message_past_max_body_mb_is_a_413_error_frame(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    """server.max_body_mb holds on the socket as over HTTP, past uvicorn's own 16 MiB default
    for a WebSocket message, and the connection stays."""
    config = proxy_config(upstream).replace("server:\n", "server:\n  max_body_mb: 20\n")
    upstream.add(text_reply("ok"))
    with run_proxy(config, tmp_path) as small, socket(small) as ws:
        (error,) = exchange(ws, create("x" * (20 << 20)))
        assert error["status"] == 413
        assert error["error"]["message"]
        assert exchange(ws, create("y"))[-1]["type"] == "response.completed"


def test_a_message_sent_while_a_response_streams_is_answered_after_it(
    proxy: RunningProxy, upstream: MockUpstream
) -> None:
    upstream.add(text_reply("first"))
    upstream.add(text_reply("second"))
    with socket(proxy) as ws:
        ws.send(json.dumps(create("one")))
        ws.send(json.dumps(create("two")))  # before anything of the first response is read
        responses: list[list[dict[str, Any]]] = [[], []]
        for events in responses:
            while not events or events[-1]["type"] not in LAST:
                events.append(json.loads(ws.recv(timeout=20)))
    texts = [
        assert_responses_stream(events)["output"][0]["content"][0]["text"] for events in responses
    ]
    assert texts == ["first", "second"]
