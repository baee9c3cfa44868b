"""Tool-call quality end to end: the real `openai` SDK against a real proxy process whose
upstream is the local mock (OpenAI format). Calls written as text in every format come back
as structured tool calls, streamed and not; a call that breaks its schema is passed (and
counted), refused, or asked for again, as each model's `on_invalid` says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import (
    PROVIDER_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_upstream import OPENAI_PATH, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import TOOLS

pytestmark = pytest.mark.e2e

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "recovery"
FORMATS = ["hermes", "qwen_xml", "mistral", "llama", "pythonic", "deepseek", "kimi", "json"]
MESSAGES: Any = [{"role": "user", "content": "Weather in Paris?"}]
BAD_ARGUMENTS = '{"city": "Paris", "unit": "kelvin"}'
GOOD_ARGUMENTS = '{"city": "Paris", "unit": "celsius"}'


def transcript_cases() -> list[Any]:
    """Every positive transcript, as (format, text, tools, expected calls)."""
    cases = []
    for fmt in FORMATS:
        for path in sorted((TRANSCRIPTS / fmt).glob("*.json")):
            case = json.loads(path.read_text())
            params = (fmt, case["text"], case["tools"], case["expected"]["calls"])
            cases.append(pytest.param(*params, id=f"{fmt}/{path.stem}"))
    return cases


@pytest.fixture(scope="module")
def proxy(
    upstream: MockUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    recovering = "\n".join(
        f"  - {{name: recover-{fmt}, provider: oa, model: m, tool_calls: {{recover: {fmt}}}}}"
        for fmt in [*FORMATS, "auto"]
    )
    config = keyed_config(
        f"""  oa:
    kind: openai
    base_url: {upstream.base_url}/v1
    api_key: {PROVIDER_KEY}""",
        f"""  - {{name: passing, provider: oa, model: m}}
  - {{name: refusing, provider: oa, model: m, tool_calls: {{on_invalid: error}}}}
  - {{name: retrying, provider: oa, model: m, tool_calls: {{on_invalid: retry, retries: 1}}}}
{recovering}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("tool-quality")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


def completion(content: str | None, calls: list[tuple[str, str]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def chunks(content: str | None, calls: list[tuple[str, str]] = ()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    """The same answer streamed: content in 3-character pieces, each call in two fragments."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": "chatcmpl-up",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [choice],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    text = content or ""
    out += [chunk({"content": text[i : i + 3]}) for i in range(0, len(text), 3)]
    for index, (name, arguments) in enumerate(calls):
        header = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [header]}))
        for piece in (arguments[:6], arguments[6:]):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    return out


def offered(tools: dict[str, Any]) -> Any:
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for name, schema in tools.items()
    ]


def calls_of(message: Any) -> list[list[Any]]:
    return [[c.function.name, json.loads(c.function.arguments)] for c in message.tool_calls or []]


@pytest.mark.parametrize(("fmt", "text", "tools", "expected"), transcript_cases())
def test_calls_written_as_text_come_back_structured(
    upstream: MockUpstream, client: openai.OpenAI, fmt: str, text: str, tools: Any, expected: Any
) -> None:
    upstream.add(Reply(json=completion(text)))
    upstream.add(Reply(frames=openai_frames(chunks(text))))

    whole = client.chat.completions.create(
        model=f"recover-{fmt}", messages=MESSAGES, tools=offered(tools)
    )
    with client.chat.completions.stream(
        model=f"recover-{fmt}", messages=MESSAGES, tools=offered(tools)
    ) as stream:
        streamed = stream.get_final_completion()

    for answer in (whole, streamed):
        choice = answer.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert calls_of(choice.message) == expected
        for call in choice.message.tool_calls or []:
            assert call.id.startswith("call_")
            assert len(call.id) == 29
    assert [c.id for c in whole.choices[0].message.tool_calls or []] != [
        c.id for c in streamed.choices[0].message.tool_calls or []
    ]


def test_text_recovery_in_auto_mode_keeps_plain_answers_untouched(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    text = 'The answer is {"answer": 42} and <b>bold</b> [1].'
    upstream.add(Reply(json=completion(text)))
    answer = client.chat.completions.create(model="recover-auto", messages=MESSAGES, tools=TOOLS)
    assert answer.choices[0].message.content == text
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].finish_reason == "stop"


def test_pass_relays_a_bad_call_and_names_its_class_in_a_header(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    upstream.add(
        Reply(json=completion(None, [("get_weather", BAD_ARGUMENTS), ("get_time", "{oops")]))
    )

    raw = client.chat.completions.with_raw_response.create(
        model="passing", messages=MESSAGES, tools=TOOLS
    )

    message = raw.parse().choices[0].message
    assert [c.function.arguments for c in message.tool_calls or []] == [BAD_ARGUMENTS, "{oops"]
    assert raw.headers["x-toolrelay-tool-calls"] == "invalid_json=1 schema_mismatch=1"


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_error_refuses_a_bad_call_naming_the_tool_and_field(
    upstream: MockUpstream, client: openai.OpenAI, stream: bool
) -> None:
    calls = [("get_weather", BAD_ARGUMENTS)]
    upstream.add(
        Reply(frames=openai_frames(chunks(None, calls)))
        if stream
        else Reply(json=completion(None, calls))
    )

    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(
            model="refusing", messages=MESSAGES, tools=TOOLS, stream=stream
        )

    assert caught.value.status_code == 502
    body: Any = caught.value.body
    assert body["code"] == "invalid_tool_call"
    assert body["message"].startswith('get_weather: "unit": "kelvin" is not one of')


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
def test_retry_asks_again_saying_what_was_wrong(
    upstream: MockUpstream, client: openai.OpenAI, stream: bool
) -> None:
    bad, good = [("get_weather", BAD_ARGUMENTS)], [("get_weather", GOOD_ARGUMENTS)]
    for calls in (bad, good):
        upstream.add(
            Reply(frames=openai_frames(chunks(None, calls)))
            if stream
            else Reply(json=completion(None, calls))
        )

    answer = client.chat.completions.create(
        model="retrying", messages=MESSAGES, tools=TOOLS, stream=stream
    )

    if stream:
        arguments = "".join(
            call.function.arguments or ""
            for chunk in answer
            for call in chunk.choices[0].delta.tool_calls or []
            if chunk.choices and call.function
        )
    else:
        arguments = answer.choices[0].message.tool_calls[0].function.arguments
    assert arguments == GOOD_ARGUMENTS
    first, second = upstream.requests(OPENAI_PATH)
    assert second.body["messages"][:-1] == first.body["messages"]
    note = second.body["messages"][-1]
    assert note["role"] == "user"
    assert '"unit": "kelvin" is not one of' in note["content"]


def test_retry_gives_up_after_its_retries_with_the_error(
    upstream: MockUpstream, client: openai.OpenAI
) -> None:
    for _ in range(2):
        upstream.add(Reply(json=completion(None, [("get_weather", BAD_ARGUMENTS)])))
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="retrying", messages=MESSAGES, tools=TOOLS)
    assert caught.value.status_code == 502
    assert len(upstream.requests(OPENAI_PATH)) == 2


def test_metrics_count_calls_violations_and_requests(
    upstream: MockUpstream, client: openai.OpenAI, proxy: RunningProxy
) -> None:
    def value(family: str, **labels: str) -> float:
        metrics = httpx.get(proxy.base_url.removesuffix("/v1") + "/metrics").text
        for metric in text_string_to_metric_families(metrics):
            for sample in metric.samples:
                if sample.name == family and labels.items() <= sample.labels.items():
                    return sample.value
        return 0.0

    labels = {"model": "passing", "provider": "oa"}
    before = {
        "bad": value(
            "toolrelay_tool_calls_total", **labels, source="structured", result="schema_mismatch"
        ),
        "enum": value("toolrelay_tool_call_violations_total", **labels, violation="enum"),
        "called": value("toolrelay_tool_requests_total", **labels, outcome="called"),
        "text": value("toolrelay_tool_requests_total", **labels, outcome="text_only"),
    }
    upstream.add(Reply(json=completion(None, [("get_weather", BAD_ARGUMENTS)])))
    upstream.add(Reply(frames=openai_frames(chunks("No tool needed."))))
    client.chat.completions.create(model="passing", messages=MESSAGES, tools=TOOLS)
    list(
        client.chat.completions.create(model="passing", messages=MESSAGES, tools=TOOLS, stream=True)
    )

    assert (
        value("toolrelay_tool_calls_total", **labels, source="structured", result="schema_mismatch")
        == before["bad"] + 1
    )
    assert (
        value("toolrelay_tool_call_violations_total", **labels, violation="enum")
        == before["enum"] + 1
    )
    assert (
        value("toolrelay_tool_requests_total", **labels, outcome="called") == before["called"] + 1
    )
    assert (
        value("toolrelay_tool_requests_total", **labels, outcome="text_only") == before["text"] + 1
    )
