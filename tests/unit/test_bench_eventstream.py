"""The bench mock's Bedrock answers (bench/mock_bodies.py, served by bench/mock_upstream.py) are
Bedrock's protocol, so the bench's Bedrock-against-anthropic figures (issue 30) measure a real
event stream: botocore's own decoder and bedrock-runtime service model read the frames, boto3's
client reads them from the running mock, and the stream carries the same text and argument
chunks as the mock's Anthropic stream, so per chunk the two kinds compare like for like."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import orjson
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from bench import mock_bodies, servers
from bench.payload import PREAMBLE, TOOL_CALLS
from tests.helpers.mock_bedrock import CREDENTIALS
from tests.unit.translators.bedrock.converse import EVENT_SHAPES
from tests.unit.translators.bedrock.shapes import output_problems
from tests.unit.translators.bedrock.test_eventstream import (
    botocore_converse_events,
    botocore_messages,
)

REPO = Path(__file__).resolve().parents[2]


def _reassembled(events: list[dict[str, Any]]) -> tuple[str, dict[int, list[str]]]:
    """The text, and each tool block's input fragments, from botocore's parsed events."""
    text, fragments = "", {}
    for event in events:
        delta = event.get("contentBlockDelta")
        if delta is None:
            continue
        if "text" in delta["delta"]:
            text += delta["delta"]["text"]
        else:
            fragments.setdefault(delta["contentBlockIndex"], []).append(
                delta["delta"]["toolUse"]["input"]
            )
    return text, fragments


@pytest.mark.parametrize("chunks", [50, 10])
def test_botocore_reads_the_mocks_converse_stream(chunks: int) -> None:
    body = b"".join(mock_bodies.bedrock_events(chunks))
    messages = botocore_messages(body)
    assert all(headers[":message-type"] == "event" for headers, _ in messages)
    pairs = mock_bodies.bedrock_event_payloads(chunks)  # what the frames carry, less `p`
    assert [headers[":event-type"] for headers, _ in messages] == [name for name, _ in pairs]
    for (_, payload), (name, fields) in zip(messages, pairs, strict=True):
        assert orjson.loads(payload) == fields | {"p": orjson.loads(payload)["p"]}
        assert output_problems(EVENT_SHAPES[name], fields) == [], name
    events = botocore_converse_events(body)
    text, fragments = _reassembled(events)
    assert text == PREAMBLE
    arguments = ["".join(parts) for _, parts in sorted(fragments.items())]
    assert arguments == [call.arguments for call in TOOL_CALLS["bedrock"]]
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    assert "usage" in events[-1]["metadata"]


@pytest.mark.parametrize("chunks", [50, 10])
def test_the_bedrock_stream_has_the_anthropic_streams_chunks(chunks: int) -> None:
    """Same text deltas, same argument fragments (the empty first one included): the long and
    the short stream differ by the same events in both kinds."""
    bedrock = mock_bodies.bedrock_event_payloads(chunks)
    anthropic = [
        orjson.loads(e.split(b"data: ", 1)[1]) for e in mock_bodies.anthropic_events(chunks)
    ]
    texts = [
        p["delta"]["text"] for n, p in bedrock if n == "contentBlockDelta" and "text" in p["delta"]
    ]
    inputs = [
        p["delta"]["toolUse"]["input"]
        for n, p in bedrock
        if n == "contentBlockDelta" and "toolUse" in p["delta"]
    ]
    deltas = [e["delta"] for e in anthropic if e["type"] == "content_block_delta"]
    assert texts == [d["text"] for d in deltas if d["type"] == "text_delta"]
    assert inputs == [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]


def test_the_mocks_converse_answer_is_a_converse_response() -> None:
    answer = orjson.loads(mock_bodies.bedrock_body())
    assert output_problems("ConverseResponse", answer) == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def mock_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "bench.mock_upstream",
        "--port",
        str(port),
        "--chunk-delay-ms",
        "0",
    ]
    log = tmp_path_factory.mktemp("bench-mock") / "mock.log"
    server = servers.start(command, log=log, ready=(port, "/health"), cwd=REPO)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def _client(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=CREDENTIALS.access_key,
        aws_secret_access_key=CREDENTIALS.secret_key,
        config=Config(retries={"total_max_attempts": 1}),
    )


REQUEST: Any = {
    "messages": [{"role": "user", "content": [{"text": "Weather and stocks?"}]}],
    "toolConfig": {
        "tools": [
            {"toolSpec": {"name": c.name, "inputSchema": {"json": {"type": "object"}}}}
            for c in TOOL_CALLS["bedrock"]
        ]
    },
}


def test_boto3_reads_the_running_mocks_stream_and_answer(mock_url: str) -> None:
    """SigV4-signed by boto3, to the model id that asks for SigV4 (`:` percent-encoded)."""
    client = _client(mock_url)
    streamed = client.converse_stream(modelId="mock.claude-sigv4-v1:0-n10", **REQUEST)
    text, fragments = _reassembled(list(streamed["stream"]))
    assert text == PREAMBLE
    assert [len(parts) for _, parts in sorted(fragments.items())] == [6, 6]
    answer = client.converse(modelId="mock.claude-sigv4-v1:0", **REQUEST)
    uses = [block["toolUse"] for block in answer["output"]["message"]["content"][1:]]
    assert [(u["toolUseId"], u["input"]) for u in uses] == [
        (c.id, c.input) for c in TOOL_CALLS["bedrock"]
    ]


def test_the_mock_refuses_a_bedrock_request_without_the_auth_its_model_names(
    mock_url: str,
) -> None:
    with pytest.raises(ClientError) as refused:
        _client(mock_url).converse(modelId="mock.claude-v1:0", **REQUEST)  # SigV4, wants Bearer
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
