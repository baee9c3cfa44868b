"""The Vercel AI SDK (npm `ai` and `@ai-sdk/openai`, installed by .ci/run into .cache/ai-sdk) on
its defaults, `createOpenAI({baseURL})` at a real proxy process: `openai(model)` is the Responses
API model; generateText and streamText run a two-step tool loop (a tool call, then text) in front
of an openai-kind chat completions mock, with `store` left as is (the SDK then sends earlier
assistant text back as `item_reference`s the proxy resolves from its store) and with
providerOptions `openai: {store: false}` (it sends the items whole)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CLIENT_KEY, REPO, SECRETS, RunningProxy
from tests.helpers.mock_upstream import OPENAI_PATH, Exchange, MockUpstream, Reply, openai_frames

pytestmark = pytest.mark.e2e

AI_SDK_MODULES = REPO / ".cache" / "ai-sdk" / "node_modules"
SCRIPT = Path(__file__).parent / "ai_sdk" / "tool_loop.mjs"
PREAMBLE = "Let me check the weather."
CALL_ID = "call_ai_sdk_weather_1"
CALL_ARGUMENTS = '{"city": "Paris"}'
FORECAST = "sunny, 21 C"  # what the script's tool returns
ANSWER_PREFIX = "Here is what the tool said: "


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-ai-sdk",
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [choice],
    }


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-ai-sdk",
        "object": "chat.completion",
        "created": 1727346178,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }


def tool_turn(stream: bool) -> Reply:
    """Some text, then a call of get_weather."""
    call = {"id": CALL_ID, "type": "function", "function": {"name": "get_weather"}}
    if not stream:
        whole = {**call, "function": {"name": "get_weather", "arguments": CALL_ARGUMENTS}}
        message = {"role": "assistant", "content": PREAMBLE, "tool_calls": [whole]}
        return Reply(json=_completion(message, "tool_calls"))
    first = {**call, "index": 0, "function": {"name": "get_weather", "arguments": ""}}
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": PREAMBLE}),
        _chunk({"tool_calls": [first]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": CALL_ARGUMENTS[:9]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": CALL_ARGUMENTS[9:]}}]}),
        _chunk({}, "tool_calls"),
    ]
    return Reply(frames=openai_frames(chunks))


def text_turn(text: str, stream: bool) -> Reply:
    if not stream:
        return Reply(json=_completion({"role": "assistant", "content": text}, "stop"))
    middle = len(text) // 2
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": text[:middle]}),
        _chunk({"content": text[middle:]}),
        _chunk({}, "stop"),
    ]
    return Reply(frames=openai_frames(chunks))


class ScriptedOpenAI(MockUpstream):
    """Calls get_weather until the conversation has its result, then answers with that result."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if exchange.path != OPENAI_PATH or not isinstance(exchange.body, dict):
            return None
        stream = bool(exchange.body.get("stream"))
        for message in exchange.body.get("messages") or []:
            if message.get("role") == "tool":
                return text_turn(ANSWER_PREFIX + str(message["content"]), stream)
        return tool_turn(stream)


@pytest.fixture(scope="module")
def upstream() -> Iterator[MockUpstream]:
    with ScriptedOpenAI() as server:
        yield server


def run_tool_loop(proxy: RunningProxy, model: str) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not AI_SDK_MODULES.joinpath("ai").exists():
        pytest.fail(
            f"node and the AI SDK in {AI_SDK_MODULES} are needed: `bash .ci/run` installs them "
            "(npm install --prefix .cache/ai-sdk ai @ai-sdk/openai)"
        )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TOOLRELAY"))}
    done = subprocess.run(
        [node, str(SCRIPT), proxy.base_url, CLIENT_KEY, model],
        env=environ | {"AI_SDK_MODULES": str(AI_SDK_MODULES)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"the AI SDK script failed:\n{done.stderr}\n{done.stdout}"
    for secret in SECRETS:
        assert secret not in done.stdout
    runs: list[dict[str, Any]] = json.loads(done.stdout)["runs"]
    return runs


def upstream_conversation(messages: list[dict[str, Any]]) -> list[Any]:
    seen: list[Any] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        calls = [
            (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in message.get("tool_calls") or []
        ]
        seen.append((message["role"], content, calls) if calls else (message["role"], content))
    return seen


def test_tool_loop_through_openai_kind(upstream: MockUpstream, proxy: RunningProxy) -> None:
    runs = run_tool_loop(proxy, "mini")

    assert [(run["mode"], run["store"]) for run in runs] == [
        ("generateText", None),
        ("streamText", None),
        ("generateText", False),
        ("streamText", False),
    ]
    for run in runs:
        label = f"{run['mode']} store={run['store']}"
        assert run["executed"] == [{"city": "Paris"}], label
        first, second = run["steps"]
        assert first["finishReason"] == "tool-calls", label
        assert first["text"] == PREAMBLE, label
        assert first["toolCalls"] == [
            {"id": CALL_ID, "name": "get_weather", "input": {"city": "Paris"}}
        ], label
        assert second["toolCalls"] == [], label
        assert second["finishReason"] == "stop", label
        # The tool's result came back to the model: its answer quotes it.
        assert run["text"].startswith(ANSWER_PREFIX), label
        assert json.loads(run["text"].removeprefix(ANSWER_PREFIX)) == {
            "city": "Paris",
            "forecast": FORECAST,
        }, label
        if run["mode"] == "streamText":
            assert run["errors"] == [], label
            assert run["streamed"] == PREAMBLE + run["text"], label  # every step's text
        # What the SDK sent back on the second step: the earlier text by reference when stored.
        sent_types = [item.get("type", "message") for item in run["sent"][1]["input"]]
        if run["store"] is None:
            assert sent_types == [
                "message",
                "item_reference",
                "function_call",
                "function_call_output",
            ]
            assert run["sent"][1]["input"][1]["id"].startswith("msg_"), label
        else:
            assert sent_types == ["message", "message", "function_call", "function_call_output"]

    exchanges = upstream.requests(OPENAI_PATH)
    assert len(exchanges) == 2 * len(runs)
    for exchange in exchanges[1::2]:
        conversation = upstream_conversation(exchange.body["messages"])
        assert conversation[:2] == [
            ("user", "What is the weather in Paris?"),
            ("assistant", PREAMBLE, [(CALL_ID, "get_weather", {"city": "Paris"})]),
        ]
        assert conversation[2][0] == "tool"
        assert json.loads(conversation[2][1]) == {"city": "Paris", "forecast": FORECAST}
        assert len(conversation) == 3


def test_tool_loop_on_demo_kind(proxy: RunningProxy) -> None:
    for run in run_tool_loop(proxy, "demo"):
        label = f"{run['mode']} store={run['store']}"
        assert len(run["executed"]) == 1, label
        assert [call["name"] for call in run["steps"][0]["toolCalls"]] == ["get_weather"], label
        assert FORECAST in run["text"], label
