"""A call that breaks its schema after text has reached the client (issue 29, item 4): the real
`openai` and `anthropic` SDKs against a real proxy process whose deployments are local mocks.
Once text is out a stream can no longer fall back, so with `on_invalid: fallback` it goes on as
`pass` would:
the held call relayed as the upstream sent it, then the finish and usage, no error event, and
no other deployment asked. `error` refuses the call (the stream's one error event, since its
200 is out), and so does `retry`, which cannot ask again either: it ends as when its retries
ran out. Before any text, the fallback still happens. Chat, the Responses and the Messages
faces (all go through the same dispatch and holding layer)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.e2e.conftest import CLIENT_KEY, RunningProxy, run_proxy, sdk_client
from tests.e2e.test_anthropic_sdk import ask as ask_anthropic
from tests.e2e.test_quality_routing_sdk import ALL_BAD, config, metrics, wait_for
from tests.e2e.test_tool_quality_sdk import BAD_ARGUMENTS, GOOD_ARGUMENTS, MESSAGES, chunks
from tests.helpers.mock_upstream import Frame, MockUpstream, Reply, openai_frames
from tests.helpers.upstream_answers import TOOLS

pytestmark = pytest.mark.e2e

TEXT = "Let me check the weather."
CALL = [("get_weather", BAD_ARGUMENTS)]
RESPONSES_TOOLS: Any = [
    {"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
    for t in TOOLS
]


def text_then_call(arguments: str = BAD_ARGUMENTS, pause: float = 0.2) -> Reply:
    """Text, then (after `pause`, so the text has gone out first) one call and the finish,
    and a usage chunk."""
    frames = openai_frames(chunks(TEXT, [("get_weather", arguments)]), done=False)
    first_call = next(
        i for i, f in enumerate(frames) if "tool_calls" in f.data["choices"][0]["delta"]
    )
    frames[first_call] = Frame(frames[first_call].data, delay=pause)
    usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    frames.append(Frame({**frames[-1].data, "choices": [], "usage": usage}))
    return Reply(frames=[*frames, Frame("[DONE]")])


@pytest.fixture(scope="module")
def bad() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def good() -> Iterator[MockUpstream]:
    with MockUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    bad: MockUpstream, good: MockUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    models = ALL_BAD.replace("PROVIDER", "good") + (
        "  - {name: passing, provider: bad, model: m}\n"
        "  - {name: refusing, provider: bad, model: m, tool_calls: {on_invalid: error}}\n"
        "  - {name: retrying, provider: bad, model: m,"
        " tool_calls: {on_invalid: retry, retries: 1}}\n"
    )
    with run_proxy(config(bad, good, models), tmp_path_factory.mktemp("after-text")) as running:
        yield running


@pytest.fixture
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


@pytest.fixture(autouse=True)
def _fresh(bad: MockUpstream, good: MockUpstream) -> None:
    bad.reset()
    good.reset()


def read_chat(client: openai.OpenAI, model: str) -> tuple[str, dict[int, list[str]], list[Any]]:
    """The streamed text, each call's (name, id, arguments), and the finish reasons."""
    stream = client.chat.completions.create(
        model=model, messages=MESSAGES, tools=TOOLS, stream=True
    )
    text, calls, finishes = "", {}, []
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        for delta in choice.delta.tool_calls or []:
            call = calls.setdefault(delta.index, ["", "", ""])
            function = delta.function
            call[0] += (function.name or "") if function else ""
            call[1] += delta.id or ""
            call[2] += (function.arguments or "") if function else ""
        if choice.finish_reason is not None:
            finishes.append(choice.finish_reason)
    return text, calls, finishes


def request_lines(proxy: RunningProxy, model: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in proxy.log.read_text().splitlines() if line[:1] == "{"]
    return [line for line in lines if "request_id" in line and line.get("model") == model]


def test_fallback_relays_a_bad_call_as_pass_once_text_went_out(
    bad: MockUpstream, good: MockUpstream, client: openai.OpenAI, proxy: RunningProxy
) -> None:
    counted = (
        "toolrelay_tool_calls_total",
        frozenset(
            {
                "model": "smart",
                "provider": "bad",
                "source": "structured",
                "result": "schema_mismatch",
            }.items()
        ),
    )
    before = metrics(proxy).get(counted, 0.0)
    logged = len(request_lines(proxy, "smart"))
    bad.add(text_then_call())

    text, calls, finishes = read_chat(client, "smart")

    assert text == TEXT
    assert calls == {0: ["get_weather", "call_0", BAD_ARGUMENTS]}
    assert finishes == ["tool_calls"]
    assert len(bad.exchanges) == 1  # one deployment asked, its answer relayed
    assert not good.exchanges  # the fallback model never asked
    assert metrics(proxy)[counted] == before + 1  # audited once, as relayed
    wait_for(lambda: len(request_lines(proxy, "smart")) > logged)  # written as the stream ends
    line = request_lines(proxy, "smart")[-1]
    assert (line["status"], line["attempts"], line["completion_tokens"]) == (200, 1, 7)
    assert "stream_error" not in line
    assert "error_code" not in line


def test_after_text_fallback_sends_the_chunks_pass_sends(
    bad: MockUpstream, client: openai.OpenAI
) -> None:
    """Chunk for chunk (ids and times aside): the held calls, the finish, the usage."""
    sent = {}
    for model in ("passing", "smart"):
        bad.add(text_then_call())
        stream = client.chat.completions.create(
            model=model,
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        sent[model] = [
            chunk.model_dump(exclude={"id", "created", "model"}, exclude_none=True)
            for chunk in stream
        ]
    assert sent["smart"] == sent["passing"]
    assert sent["smart"][-1]["usage"]["total_tokens"] == 12


def test_fallback_still_happens_when_the_bad_call_comes_before_any_text(
    bad: MockUpstream, good: MockUpstream, client: openai.OpenAI
) -> None:
    for _ in range(2):  # both of smart's deployments
        bad.add(Reply(frames=openai_frames(chunks(None, CALL))))
    good.add(Reply(frames=openai_frames(chunks(None, [("get_weather", GOOD_ARGUMENTS)]))))

    text, calls, finishes = read_chat(client, "smart")

    assert (text, finishes) == ("", ["tool_calls"])
    assert [call[::2] for call in calls.values()] == [["get_weather", GOOD_ARGUMENTS]]
    assert len(bad.exchanges) == 2
    assert len(good.exchanges) == 1


@pytest.mark.parametrize("model", ["refusing", "retrying"])
def test_error_and_retry_end_with_the_error_event_once_text_went_out(
    bad: MockUpstream, client: openai.OpenAI, model: str
) -> None:
    """`retry` cannot ask again once text is out: it ends as when its retries ran out."""
    bad.add(text_then_call())
    stream = client.chat.completions.create(
        model=model, messages=MESSAGES, tools=TOOLS, stream=True
    )
    text: list[str] = []
    with pytest.raises(openai.APIError) as caught:
        text.extend(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "".join(text) == TEXT
    assert caught.value.code == "invalid_tool_call"
    assert '"unit": "kelvin" is not one of' in caught.value.message
    assert len(bad.exchanges) == 1


def test_the_responses_face_relays_the_call_after_text_too(
    bad: MockUpstream, good: MockUpstream, client: openai.OpenAI
) -> None:
    bad.add(text_then_call())

    events = list(
        client.responses.create(
            model="smart", input="Weather in Paris?", tools=RESPONSES_TOOLS, stream=True
        )
    )

    kinds = [event.type for event in events]
    assert "error" not in kinds
    assert kinds[-1] == "response.completed"
    output = events[-1].response.output
    assert [item.type for item in output] == ["message", "function_call"]
    assert output[0].content[0].text == TEXT
    assert (output[1].name, output[1].arguments) == ("get_weather", BAD_ARGUMENTS)
    assert events[-1].response.usage is not None
    assert len(bad.exchanges) == 1
    assert not good.exchanges


def test_the_messages_face_relays_the_call_after_text_too(
    bad: MockUpstream, good: MockUpstream, proxy: RunningProxy
) -> None:
    bad.add(text_then_call())
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS
    ]
    base_url = f"http://127.0.0.1:{proxy.port}"
    with anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        message = ask_anthropic(sdk, stream=True, model="smart", messages=MESSAGES, tools=tools)

    assert message["stop_reason"] == "tool_use"
    assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
    assert message["content"][0]["text"] == TEXT
    assert message["content"][1]["name"] == "get_weather"
    assert message["content"][1]["input"] == json.loads(BAD_ARGUMENTS)
    assert len(bad.exchanges) == 1
    assert not good.exchanges
