"""Any message on a Responses WebSocket, however malformed, against a real proxy process on one
connection kept for the whole run: junk text, JSON of every type, `response.create` messages
with fields missing, wrong-typed or null (`generate`, `previous_response_id`, `input`...), huge
strings and nesting deeper than the proxy reads. The answer is an error frame with a 4xx status
and OpenAI's error body, or a stream that ends with its terminal event; never a 5xx, never a
closed connection: the next good message is answered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, keyed_config, run_proxy
from tests.helpers.responses_stream import LAST, assert_responses_stream

pytestmark = pytest.mark.e2e

scalars = st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats() | st.text(max_size=6)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "model",
    "input",
    "generate",
    "previous_response_id",
    "store",
    "client_metadata",
    "tools",
    "instructions",
    "stream",
    "include",
    "reasoning",
    "text",
    "max_output_tokens",
]


def nested(levels: int) -> Any:
    value: Any = "x"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


creates = st.fixed_dictionaries(
    {"type": st.just("response.create")},
    optional={
        "model": st.sampled_from(["demo", "nope", ""]) | json_values,
        "input": st.just("hello") | json_values | st.builds(nested, st.integers(50, 300)),
        "generate": st.booleans() | json_values,
        "previous_response_id": st.sampled_from(["resp_x", ""]) | json_values,
        "store": st.booleans() | json_values,
        "client_metadata": json_values,
        "tools": json_values,
        "instructions": st.text(max_size=20) | json_values,
        "stream": json_values,
        "include": json_values,
        "max_output_tokens": json_values,
    },
)
messages = (
    st.text(max_size=40)
    | json_values.map(json.dumps)
    | st.dictionaries(st.sampled_from([*FIELDS, "type"]), json_values).map(json.dumps)
    | creates.map(json.dumps)
    | st.integers(1, 3).map(
        lambda n: json.dumps({"type": "response.create", "input": "x" * (n * 400_000)})
    )
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientConnection]:
    config = keyed_config("  demo: {kind: demo}", "  - {name: demo, provider: demo, model: demo}")
    with run_proxy(config, tmp_path_factory.mktemp("ws-fuzz")) as proxy:
        yield from _socket(proxy)


def _socket(proxy: RunningProxy) -> Iterator[ClientConnection]:
    url = f"ws://127.0.0.1:{proxy.port}/v1/responses"
    headers = {"Authorization": f"Bearer {CLIENT_KEY}"}
    with connect(url, additional_headers=headers, max_size=None) as connection:
        yield connection


def answer(ws: ClientConnection, message: str) -> list[dict[str, Any]]:
    ws.send(message)
    events = []
    while True:
        frame = ws.recv(timeout=30)
        assert isinstance(frame, str)
        event = json.loads(frame)
        events.append(event)
        if event["type"] in LAST or event["type"] == "error":
            return events


def _receipt(message: str) -> bool:
    try:
        decoded = json.loads(message)
    except ValueError:
        return False
    return isinstance(decoded, dict) and decoded.get("type") == "response.processed"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(message=messages)
def test_any_message_is_answered_and_the_connection_stays(
    ws: ClientConnection, message: str
) -> None:
    if _receipt(message):
        return  # Codex's `response.processed`: nothing to answer
    events = answer(ws, message)
    last = events[-1]
    if last["type"] == "error":
        assert len(events) == 1, events
        assert 400 <= last["status"] < 500, last
        assert isinstance(last["error"]["message"], str), last
        assert last["error"]["message"]
    elif len(events) > 2:  # a warm-up is created + completed only
        assert_responses_stream(events)
    good = {"type": "response.create", "model": "demo", "input": "hi"}
    assert answer(ws, json.dumps(good))[-1]["type"] == "response.completed"
