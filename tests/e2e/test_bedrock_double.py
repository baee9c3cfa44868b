"""The Bedrock double (tests/helpers/mock_bedrock.py) proven against AWS's own client: boto3's
`bedrock-runtime` client, signing with SigV4, sends Converse and ConverseStream to it and
parses everything it answers (answers, binary event streams, exception frames, errors), and
the double refuses what Bedrock refuses: a wrong signature (so it really verifies SigV4), a
body botocore's shape or Bedrock's conversation rules reject. Proxy-side tests can then trust
it to speak Bedrock's protocol, not only what our code expects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import orjson
import pytest
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from tests.helpers.bedrock_rules import ALTERNATE, TOOL_CONFIG_REQUIRED
from tests.helpers.mock_bedrock import (
    API_KEY,
    CREDENTIALS,
    MockBedrock,
    bedrock_error,
    converse_answer,
    converse_stream,
    converse_stream_frames,
    model_path,
    stream_exception,
    stream_reply,
)

pytestmark = pytest.mark.e2e

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
ARN = (
    "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/"
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)
CALLS = [
    ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather", {"city": "Paris", "unit": "celsius"}),
    ("tooluse_Xy3bQ1t0SfO-2Vd9k_ab1w", "get_time", {"timezone": "Asia/Tokyo"}),
]
TOOL_CONFIG: Any = {
    "tools": [
        {"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}}
        for _, name, _ in CALLS
    ],
    "toolChoice": {"auto": {}},
}
USER: Any = {"role": "user", "content": [{"text": "Weather in Paris and time in Tokyo?"}]}
ASSISTANT_CALLS: Any = {
    "role": "assistant",
    "content": [
        {"toolUse": {"toolUseId": call_id, "name": name, "input": tool_input}}
        for call_id, name, tool_input in CALLS
    ],
}


def tool_results(*call_ids: str) -> dict[str, Any]:
    results = [
        {"toolResult": {"toolUseId": call_id, "content": [{"json": {"ok": True}}]}}
        for call_id in call_ids
    ]
    return {"role": "user", "content": results}


HISTORY: Any = [USER, ASSISTANT_CALLS, tool_results(*(call[0] for call in CALLS))]


@pytest.fixture(scope="module")
def bedrock() -> Iterator[MockBedrock]:
    with MockBedrock() as double:
        yield double


@pytest.fixture(autouse=True)
def fresh(bedrock: MockBedrock) -> None:
    bedrock.reset()


def client(bedrock: MockBedrock, **overrides: Any) -> BaseClient:
    """boto3 as an application would build it, with SigV4 credentials; no retries (fast)."""
    settings: dict[str, Any] = {
        "region_name": bedrock.region,
        "endpoint_url": bedrock.base_url,
        "aws_access_key_id": CREDENTIALS.access_key,
        "aws_secret_access_key": CREDENTIALS.secret_key,
        "aws_session_token": CREDENTIALS.token,
        "config": Config(retries={"total_max_attempts": 1}),
    }
    return boto3.client("bedrock-runtime", **(settings | overrides))


@pytest.mark.parametrize("model_id", [MODEL, ARN])
def test_converse_with_tools_parallel_calls_and_a_tool_result_history(
    bedrock: MockBedrock, model_id: str
) -> None:
    bedrock.add_converse(model_id, converse_answer("Checking both.", CALLS))
    answer = client(bedrock).converse(
        modelId=model_id, messages=[USER], toolConfig=TOOL_CONFIG, system=[{"text": "Be brief."}]
    )
    assert answer["stopReason"] == "tool_use"
    uses = [block["toolUse"] for block in answer["output"]["message"]["content"][1:]]
    assert [(use["toolUseId"], use["name"], use["input"]) for use in uses] == CALLS
    assert answer["usage"]["totalTokens"] == 19

    bedrock.add_converse(model_id, converse_answer("Sunny, and it is noon."))
    answer = client(bedrock).converse(modelId=model_id, messages=HISTORY, toolConfig=TOOL_CONFIG)
    assert answer["output"]["message"]["content"] == [{"text": "Sunny, and it is noon."}]
    assert [call.model_id for call in bedrock.calls] == [model_id, model_id]
    assert {call.auth for call in bedrock.calls} == {"sigv4"}
    assert bedrock.exchanges[-1].path == model_path(model_id)
    assert "%3A" in bedrock.exchanges[-1].path
    assert ("%2F" in bedrock.exchanges[-1].path) == (model_id == ARN)
    assert bedrock.exchanges[-1].body["messages"] == HISTORY


def test_converse_stream_is_parsed_to_the_end_by_boto3(bedrock: MockBedrock) -> None:
    bedrock.add_stream(MODEL, converse_stream("Let me check.", CALLS))
    answer = client(bedrock).converse_stream(modelId=MODEL, messages=[USER], toolConfig=TOOL_CONFIG)
    events = list(answer["stream"])
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "messageStart"
    assert kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    assert text == "Let me check."
    starts = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert [s["start"]["toolUse"]["name"] for s in starts] == ["get_weather", "get_time"]
    for start, (call_id, _, tool_input) in zip(starts, CALLS, strict=True):
        index = start["contentBlockIndex"]
        fragments = [
            e["contentBlockDelta"]["delta"]["toolUse"]["input"]
            for e in events
            if e.get("contentBlockDelta", {}).get("contentBlockIndex") == index
        ]
        assert start["start"]["toolUse"]["toolUseId"] == call_id
        assert fragments[0] == ""
        assert orjson.loads("".join(fragments)) == tool_input
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    assert events[-1]["metadata"]["usage"]["totalTokens"] == 19
    assert bedrock.calls[-1].operation == "converse-stream"


def test_a_throttling_frame_mid_stream_is_boto3s_event_stream_error(bedrock: MockBedrock) -> None:
    frames = converse_stream_frames("Let me check the weather.")
    bedrock.add_stream(MODEL, stream_reply([*frames[:3], stream_exception("throttlingException")]))
    answer = client(bedrock).converse_stream(modelId=MODEL, messages=[USER])
    received: list[dict[str, Any]] = []
    with pytest.raises(EventStreamError) as caught:
        received.extend(answer["stream"])
    assert len(received) == 3
    assert caught.value.response["Error"]["Code"] == "throttlingException"


def test_an_http_error_is_the_modelled_exception(bedrock: MockBedrock) -> None:
    aws = client(bedrock)
    bedrock.add_converse(MODEL, bedrock_error(429, "ThrottlingException", "Too many tokens"))
    with pytest.raises(aws.exceptions.ThrottlingException, match="Too many tokens"):
        aws.converse(modelId=MODEL, messages=[USER])


REFUSED: list[tuple[str, list[Any], Any, str]] = [
    ("tool blocks without toolConfig", HISTORY, None, TOOL_CONFIG_REQUIRED),
    (
        "parallel results in separate user turns",
        [USER, ASSISTANT_CALLS, tool_results(CALLS[0][0]), tool_results(CALLS[1][0])],
        TOOL_CONFIG,
        f"Expected toolResult blocks at messages.2.content for the following Ids: {CALLS[1][0]}",
    ),
    (
        "a result with no call before it",
        [USER, {"role": "assistant", "content": [{"text": "ok"}]}, tool_results("tooluse_1")],
        TOOL_CONFIG,
        "exceeds the number of toolUse blocks of previous turn",
    ),
    (
        "blank text",
        [{"role": "user", "content": [{"text": "hi"}, {"text": "  "}]}],
        None,
        "The text field in the ContentBlock object at messages.0.content.1 is blank",
    ),
    (
        "a tool name Bedrock refuses",
        [USER],
        {"tools": [{"toolSpec": {"name": "get.weather", "inputSchema": {"json": {}}}}]},
        "at 'toolConfig.tools.1.member.toolSpec.name' failed to satisfy constraint",
    ),
    ("roles not alternating", [USER, USER], None, ALTERNATE),
    (
        "a toolResult json that is an array",
        [
            USER,
            {"role": "assistant", "content": ASSISTANT_CALLS["content"][:1]},
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": CALLS[0][0], "content": [{"json": [1, 2]}]}}
                ],
            },
        ],
        TOOL_CONFIG,
        "must be a JSON object",
    ),
    (
        "five cache points",
        [{"role": "user", "content": [{"text": "hi"}] + [{"cachePoint": {"type": "default"}}] * 5}],
        None,
        "A maximum of 4 cachePoint blocks",
    ),
]


@pytest.mark.parametrize(
    ("messages", "tool_config", "message"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_bedrocks_rules_are_validation_exceptions(
    bedrock: MockBedrock, messages: list[Any], tool_config: Any, message: str
) -> None:
    aws = client(bedrock)
    extra = {"toolConfig": tool_config} if tool_config else {}
    with pytest.raises(aws.exceptions.ValidationException) as caught:
        aws.converse(modelId=MODEL, messages=messages, **extra)
    assert message in caught.value.response["Error"]["Message"]
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_body_outside_botocores_shape_is_refused(bedrock: MockBedrock) -> None:
    """boto3 checks its own input; with that off, the double checks the same shape."""
    aws = client(bedrock, config=Config(parameter_validation=False))
    bad = [{"role": "user", "content": [{"text": "hi", "image": {}}]}]
    with pytest.raises(aws.exceptions.ValidationException, match="messages"):
        aws.converse(modelId=MODEL, messages=bad, inferenceConfig={"maxTokens": 0})


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"aws_secret_access_key": "not-the-secret"}, "InvalidSignatureException"),
        ({"region_name": "eu-west-3"}, "InvalidSignatureException"),
        ({"aws_session_token": "another-token"}, "UnrecognizedClientException"),
        ({"aws_access_key_id": "AKIAUNKNOWNKEY000000"}, "UnrecognizedClientException"),
    ],
)
def test_sigv4_is_verified(bedrock: MockBedrock, overrides: dict[str, str], code: str) -> None:
    bedrock.add_converse(MODEL, converse_answer("never sent"))
    with pytest.raises(ClientError) as caught:
        client(bedrock, **overrides).converse(modelId=MODEL, messages=[USER])
    assert caught.value.response["Error"]["Code"] == code
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_the_signature_covers_the_body(bedrock: MockBedrock) -> None:
    """A signed request replayed with another body: the same headers no longer verify."""
    bedrock.add_converse(MODEL, converse_answer("Hi."))
    client(bedrock).converse(modelId=MODEL, messages=[USER])
    signed = bedrock.exchanges[-1]
    headers = {k: v for k, v in signed.headers.items() if k not in ("content-length", "host")}
    tampered = {"messages": [{"role": "user", "content": [{"text": "something else"}]}]}
    answer = httpx.post(bedrock.base_url + signed.path, json=tampered, headers=headers)
    assert answer.status_code == 403
    assert answer.headers["x-amzn-errortype"].startswith("InvalidSignatureException:")


def test_a_bedrock_api_key_as_bearer_token(bedrock: MockBedrock) -> None:
    bedrock.add_converse(ARN, converse_answer("Hi."))
    url = bedrock.base_url + model_path(ARN)
    answer = httpx.post(
        url, json={"messages": [USER]}, headers={"authorization": f"Bearer {API_KEY}"}
    )
    assert answer.status_code == 200
    assert answer.json()["output"]["message"]["content"] == [{"text": "Hi."}]
    assert (bedrock.calls[-1].model_id, bedrock.calls[-1].auth) == (ARN, "bearer")
    wrong = httpx.post(url, json={"messages": [USER]}, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 403
    assert wrong.headers["x-amzn-errortype"].startswith("UnrecognizedClientException:")
    missing = httpx.post(url, json={"messages": [USER]})
    assert (missing.status_code, missing.json()) == (
        403,
        {"Message": "Authorization header is missing"},
    )
