"""Reasoning through a real proxy process with the real `openai` SDK as client.

A three-turn tool loop with thinking on through a mock Anthropic that enforces Anthropic's
thinking rules (tests/helpers/thinking_rules.py: blocks first, signatures as issued,
else Anthropic's own 400), stream and non-stream, with a client that sends the whole message
back (`message.model_dump()`) and one that keeps only the standard fields; then
`reasoning_effort: "high"` on an openai and a gemini upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_anthropic import (
    MockAnthropic,
    message_events,
    thinking_text_message,
    thinking_tool_message,
)
from tests.helpers.mock_upstream import Reply, anthropic_frames

pytestmark = pytest.mark.e2e

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
QUESTION: Any = {"role": "user", "content": "What do a.txt and b.txt say?"}
TURNS = [
    ("I should read a.txt first.", "toolu_01ReadA", "a.txt"),
    ("Now b.txt; a.txt said hello.", "toolu_01ReadB", "b.txt"),
]
ANSWER = "a.txt says hello, b.txt says world."
FINAL_THOUGHT = "Both files read; answer plainly."
RESULTS = {"toolu_01ReadA": "hello", "toolu_01ReadB": "world"}


@pytest.fixture(scope="module")
def anthropic() -> Iterator[MockAnthropic]:
    with MockAnthropic(ANTHROPIC_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    anthropic: MockAnthropic, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    config = keyed_config(
        f"""  an:
    kind: anthropic
    base_url: {anthropic.base_url}
    api_key: {ANTHROPIC_KEY}""",
        """  - {name: claude, provider: an, model: claude-sonnet-4-5, max_tokens: 2048}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("reasoning-proxy")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


@pytest.fixture(autouse=True)
def _fresh_anthropic(anthropic: MockAnthropic) -> None:
    anthropic.reset()


def script(anthropic: MockAnthropic, *, stream: bool) -> None:
    """Two thinking + tool_use answers, then thinking + text: the mock remembers each
    signature it hands out and refuses a later request that does not bring it back."""
    messages = [
        thinking_tool_message(thought, [(call_id, "read_file", {"path": path})])
        for thought, call_id, path in TURNS
    ]
    messages.append(thinking_text_message(FINAL_THOUGHT, ANSWER))
    for message in messages:
        reply = (
            Reply(frames=anthropic_frames(message_events(message)))
            if stream
            else Reply(json=message)
        )
        anthropic.answer(reply)


def run_loop(
    client: openai.OpenAI, *, stream: bool, keep_fields: bool
) -> tuple[list[Any], list[dict[str, str]]]:
    """The agent loop: ask, run each requested tool, send the result, until a text answer.
    Returns each turn's assistant message and the response headers."""
    messages: list[Any] = [QUESTION]
    turns: list[Any] = []
    headers: list[dict[str, str]] = []
    for _ in range(3):
        fields: Any = {
            "model": "claude",
            "messages": messages,
            "tools": TOOLS,
            "reasoning_effort": "high",
        }
        if stream:
            with client.chat.completions.with_streaming_response.create(
                stream=True, **fields
            ) as response:
                headers.append(dict(response.headers))
                state = ChatCompletionStreamState(input_tools=TOOLS)
                for chunk in response.parse():
                    state.handle_chunk(chunk)
                completion = state.get_final_completion()
        else:
            raw = client.chat.completions.with_raw_response.create(**fields)
            completion = raw.parse()
            headers.append(dict(raw.headers))
        message = completion.choices[0].message
        turns.append(message)
        if keep_fields:
            messages.append(message.model_dump(exclude_none=True))
        else:
            messages.append(standard_fields(message))
        for call in message.tool_calls or []:
            result = RESULTS[call.id]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        if not message.tool_calls:
            break
    return turns, headers


def standard_fields(message: Any) -> dict[str, Any]:
    """What a client that knows only OpenAI's documented fields sends back."""
    kept: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        kept["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    return kept


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
@pytest.mark.parametrize("keep_fields", [True, False], ids=["keeps-fields", "drops-fields"])
def test_a_three_turn_tool_loop_with_thinking_on(
    client: openai.OpenAI, anthropic: MockAnthropic, stream: bool, keep_fields: bool
) -> None:
    script(anthropic, stream=stream)
    turns, headers = run_loop(client, stream=stream, keep_fields=keep_fields)

    assert [turn.content or None for turn in turns] == [None, None, ANSWER]  # stream: ""
    calls = [
        (call.id, json.loads(call.function.arguments)) for t in turns for call in t.tool_calls or []
    ]
    assert calls == [("toolu_01ReadA", {"path": "a.txt"}), ("toolu_01ReadB", {"path": "b.txt"})]
    thoughts = [thought for thought, _, _ in TURNS] + [FINAL_THOUGHT]
    assert [extra(turn, "reasoning_content") for turn in turns] == thoughts
    for turn, thought in zip(turns, thoughts, strict=True):
        blocks = [dict(block) for block in extra(turn, "thinking_blocks")]
        assert [block["thinking"] for block in blocks] == [thought]
        assert thought not in (turn.content or "")
    assert all("x-toolrelay-warning" not in turn_headers for turn_headers in headers)

    sent = [exchange.body for exchange in anthropic.exchanges]
    assert len(sent) == 3  # the mock refused nothing: every answer was one request
    assert all(body["thinking"] == {"type": "enabled", "budget_tokens": 16384} for body in sent)
    assert all(body["max_tokens"] == 2048 + 16384 for body in sent)
    assert [block["type"] for block in sent[2]["messages"][3]["content"]] == [
        "thinking",
        "tool_use",
    ]


def extra(message: Any, field: str) -> Any:
    """A field the SDK's types do not declare, kept on the model as an extra."""
    return (message.model_extra or {}).get(field)


def test_a_loop_the_proxy_has_no_blocks_for_runs_without_thinking_and_says_so(
    client: openai.OpenAI, anthropic: MockAnthropic
) -> None:
    """History from elsewhere (another proxy, a restart): without the blocks Anthropic would
    answer 400 with thinking on; the request goes without, and the client is told."""
    anthropic.answer(Reply(json=thinking_text_message("unused", "Done.", with_thinking=False)))
    history: Any = [
        QUESTION,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_01NeverSeen",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01NeverSeen", "content": "hello"},
    ]
    raw = client.chat.completions.with_raw_response.create(
        model="claude", messages=history, tools=TOOLS, reasoning_effort="high"
    )
    assert raw.parse().choices[0].message.content == "Done."
    assert "without its thinking_blocks" in raw.headers["x-toolrelay-warning"]
    assert "thinking" not in anthropic.exchanges[-1].body
