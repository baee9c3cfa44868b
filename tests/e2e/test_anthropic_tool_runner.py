"""The anthropic SDK's tool runner (`client.beta.messages.tool_runner`) on its defaults against a
real proxy process: it keeps the conversation as a server-held `thread` (a `create`, then
`continue`s that send only the new tool results), so what the proxy kept of each answer is what
the next turn sends upstream. The first answer is text and two parallel calls, streamed (with
the calls' fragments interleaved) and not; each kind's upstream must get the whole turn back,
every call with its arguments, and each result for a call it made. Kinds: an OpenAI-compatible
mock, a validating Gemini mock, an Anthropic mock that keeps threads as Anthropic does (the
proxy relays them as sent), and the demo."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import beta_tool

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    SECRETS,
    RunningProxy,
    every_kind_config,
    run_proxy,
)
from tests.helpers.mock_anthropic import MockAnthropic, anthropic_error, message, message_events
from tests.helpers.mock_gemini import (
    GEMINI_TEXT,
    MockGemini,
    gemini_answer,
    gemini_tool_answer,
    gemini_tool_frames,
    issued_signatures,
)
from tests.helpers.mock_upstream import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Exchange,
    Frame,
    MockUpstream,
    Reply,
    anthropic_frames,
    openai_frames,
)
from tests.helpers.upstream_answers import CALLS

pytestmark = pytest.mark.e2e

PREAMBLE = "Let me look both up."
ANSWER = "Both looked up."
ARGUMENTS = [json.loads(arguments) for _, _, arguments in CALLS]
RESULTS = ["18 C in Paris", "09:30 in Asia/Tokyo"]


@beta_tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather in a city."""
    return f"18 C in {city}"


@beta_tool
def get_time(timezone: str, hours24: bool = True) -> str:
    """Local time in a timezone."""
    return f"09:30 in {timezone}"


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-runner",
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": "gpt-4o-mini",
        "choices": [choice],
    }


def openai_calls(stream: bool) -> Reply:
    """Text, then both calls, the second announced before the first's arguments are done."""
    if not stream:
        calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in CALLS
        ]
        whole = {"role": "assistant", "content": PREAMBLE, "tool_calls": calls}
        return Reply(json=_completion(whole, "tool_calls"))
    (id0, name0, args0), (id1, name1, args1) = CALLS

    def start(index: int, call_id: str, name: str) -> dict[str, Any]:
        function = {"name": name, "arguments": ""}
        return {
            "tool_calls": [
                {"index": index, "id": call_id, "type": "function", "function": function}
            ]
        }

    def fragment(index: int, part: str) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, "function": {"arguments": part}}]}

    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": PREAMBLE}),
        _chunk(start(0, id0, name0)),
        _chunk(fragment(0, args0[:7])),
        _chunk(start(1, id1, name1)),
        _chunk(fragment(0, args0[7:])),
        _chunk(fragment(1, args1)),
        _chunk({}, "tool_calls"),
    ]
    return Reply(frames=openai_frames(chunks))


def _completion(chat_message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-runner",
        "object": "chat.completion",
        "created": 1727346178,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": chat_message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }


def openai_text(stream: bool) -> Reply:
    if not stream:
        return Reply(json=_completion({"role": "assistant", "content": ANSWER}, "stop"))
    chunks = [_chunk({"role": "assistant", "content": ANSWER}), _chunk({}, "stop")]
    return Reply(frames=openai_frames(chunks))


class ScriptedOpenAI(MockUpstream):
    """Calls both tools until the conversation holds tool results; refuses a result for a call
    no earlier assistant turn made, as OpenAI does."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if exchange.path != OPENAI_PATH or not isinstance(exchange.body, dict):
            return None
        made: set[str] = set()
        answered = False
        for chat_message in exchange.body.get("messages") or []:
            made |= {call["id"] for call in chat_message.get("tool_calls") or ()}
            if chat_message.get("role") == "tool":
                if chat_message["tool_call_id"] not in made:
                    error = {"message": "tool message without a preceding call", "code": None}
                    return Reply(400, json={"error": {**error, "type": "invalid_request_error"}})
                answered = True
        stream = bool(exchange.body.get("stream"))
        return openai_text(stream) if answered else openai_calls(stream)


class ScriptedGemini(MockGemini):
    """Both calls (the first signed) until the conversation holds their responses; the base
    mock refuses a history Gemini would (a response to no call, a dropped signature)."""

    def __init__(self) -> None:
        super().__init__(GEMINI_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        contents = exchange.body.get("contents") or []
        answered = any("functionResponse" in p for c in contents for p in c.get("parts") or ())
        stream = "streamGenerateContent" in exchange.path
        if answered:
            final = gemini_answer([{"text": ANSWER}])
            reply = Reply(frames=[Frame(final)]) if stream else Reply(json=final)
        else:
            reply = (
                Reply(frames=gemini_tool_frames()) if stream else Reply(json=gemini_tool_answer())
            )
        self.issued.update(issued_signatures(reply))
        return reply


class ThreadedAnthropic(MockAnthropic):
    """Keeps threads as the Messages API does: a `continue` is the kept conversation followed
    by the request's messages, screened whole; an unknown id is Anthropic's 400."""

    def __init__(self) -> None:
        super().__init__(ANTHROPIC_KEY)
        self.threads: dict[str, dict[str, Any]] = {}
        self.served = 0

    def reset(self) -> None:
        super().reset()
        self.threads.clear()
        self.served = 0

    def _screen(self, exchange: Exchange) -> Reply | None:
        body = dict(exchange.body) if isinstance(exchange.body, dict) else {}
        thread = body.pop("thread", None) or {}
        if thread.get("type") == "continue":
            kept = self.threads.get(thread.get("previous_message_id"))
            if kept is None:
                return Reply(400, json=anthropic_error("invalid_request_error", "no thread"))
            body = {**kept, **body, "messages": [*kept["messages"], *body.get("messages", [])]}
        whole = Exchange(exchange.method, exchange.path, exchange.headers, body)
        refusal = super()._screen(whole)
        if refusal is not None:
            return refusal
        answered = any(
            block.get("type") == "tool_result"
            for turn in body["messages"]
            for block in (turn["content"] if isinstance(turn["content"], list) else ())
        )
        if answered:
            answer = message([{"type": "text", "text": ANSWER}], "end_turn")
        else:
            uses = [
                {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)}
                for i, n, a in CALLS
            ]
            answer = message([{"type": "text", "text": PREAMBLE}, *uses], "tool_use")
        self.served += 1
        answer["id"] = f"msg_threaded_{self.served}"
        if thread:
            turn = {"role": "assistant", "content": answer["content"]}
            kept_fields = {name: body[name] for name in ("system", "tools") if name in body}
            self.threads[answer["id"]] = {**kept_fields, "messages": [*body["messages"], turn]}
        if body.get("stream"):
            return Reply(frames=anthropic_frames(message_events(answer)))
        return Reply(json=answer)


Upstreams = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with ScriptedOpenAI() as oa, ThreadedAnthropic() as an, ScriptedGemini() as gm:
        yield {"openai": oa, "anthropic": an, "gemini": gm}


@pytest.fixture(scope="module")
def proxy(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    oa, an, gm = (upstreams[kind].base_url for kind in ("openai", "anthropic", "gemini"))
    with run_proxy(every_kind_config(oa, an, gm), tmp_path_factory.mktemp("runner")) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstreams: Upstreams) -> None:
    for upstream in upstreams.values():
        upstream.reset()


def run_tool_runner(
    proxy: RunningProxy, model: str, *, stream: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The runner's messages (each streamed one as the SDK's accumulator made it) and the
    bodies it sent."""
    sent: list[dict[str, Any]] = []

    def record(request: httpx2.Request) -> None:
        sent.append(json.loads(request.content))

    http = httpx2.Client(event_hooks={"request": [record]})
    base_url = f"http://127.0.0.1:{proxy.port}"
    with anthropic.Anthropic(
        base_url=base_url, api_key=CLIENT_KEY, max_retries=0, http_client=http
    ) as client:
        fields: Any = {
            "model": model,
            "max_tokens": 512,
            "tools": [get_weather, get_time],
            "messages": [{"role": "user", "content": "Weather in Paris and time in Tokyo?"}],
        }
        answers: list[dict[str, Any]] = []
        if stream:
            for events in client.beta.messages.tool_runner(**fields, stream=True):
                for _ in events:
                    pass
                answers.append(events.get_final_message().to_dict(exclude_none=True))
        else:
            for answer in client.beta.messages.tool_runner(**fields):
                answers.append(answer.to_dict(exclude_none=True))
    return answers, sent


def blocks(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        ("text", block["text"]) if block["type"] == "text" else (block["name"], block["input"])
        for block in answer["content"]
    ]


def openai_turns(body: dict[str, Any]) -> list[Any]:
    turns: list[Any] = []
    for chat_message in body["messages"]:
        calls = [
            (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in chat_message.get("tool_calls") or ()
        ]
        content = chat_message["content"]
        if isinstance(content, list):
            content = "".join(part["text"] for part in content)
        if chat_message["role"] == "tool":
            turns.append(("tool", chat_message["tool_call_id"], content))
        elif calls:
            turns.append((chat_message["role"], content, calls))
        else:
            turns.append((chat_message["role"], content))
    return turns


def gemini_turns(body: dict[str, Any]) -> list[Any]:
    turns: list[Any] = []
    for content in body["contents"]:
        parts: list[Any] = []
        for part in content["parts"]:
            if "functionCall" in part:
                parts.append(("call", part["functionCall"]["name"], part["functionCall"]["args"]))
            elif "functionResponse" in part:
                response = part["functionResponse"]
                parts.append(("response", response["name"], response["response"]))
            else:
                parts.append(("text", part["text"]))
        turns.append((content["role"], parts))
    return turns


KINDS = [
    pytest.param("openai", "mini", id="openai"),
    pytest.param("gemini", "gem", id="gemini"),
    pytest.param("anthropic", "claude", id="anthropic"),
]
STREAMS = [pytest.param(True, id="stream"), pytest.param(False, id="non-stream")]


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize(("kind", "model"), KINDS)
def test_the_tool_runner_continues_its_thread_on_every_kind(
    upstreams: Upstreams, proxy: RunningProxy, kind: str, model: str, stream: bool
) -> None:
    answers, sent = run_tool_runner(proxy, model, stream=stream)

    first, last = answers
    names = [name for _, name, _ in CALLS]
    preamble = GEMINI_TEXT if kind == "gemini" else PREAMBLE
    assert blocks(first) == [("text", preamble), *zip(names, ARGUMENTS, strict=True)]
    assert blocks(last) == [("text", ANSWER)]
    # The runner held a thread: the second request sent only the two results.
    assert sent[0]["thread"] == {"type": "create"}
    assert sent[1]["thread"] == {"type": "continue", "previous_message_id": first["id"]}
    [results] = sent[1]["messages"]
    assert [block["content"] for block in results["content"]] == RESULTS
    for secret in SECRETS:
        assert secret not in json.dumps(answers)

    upstream = upstreams[kind]
    if kind == "openai":
        second = upstream.requests(OPENAI_PATH)[1].body
        call_ids = [call_id for call_id, _, _ in CALLS]
        assert openai_turns(second) == [
            ("user", "Weather in Paris and time in Tokyo?"),
            ("assistant", PREAMBLE, list(zip(call_ids, names, ARGUMENTS, strict=True))),
            ("tool", call_ids[0], RESULTS[0]),
            ("tool", call_ids[1], RESULTS[1]),
        ]
    elif kind == "gemini":
        assert isinstance(upstream, MockGemini)
        second = upstream.gemini_requests()[1].body
        turns = gemini_turns(second)
        assert [role for role, _ in turns] == ["user", "model", "user"]
        assert [part for part in turns[1][1] if part[0] == "call"] == [
            ("call", name, arguments) for name, arguments in zip(names, ARGUMENTS, strict=True)
        ]
        assert [part[1] for part in turns[2][1]] == names
    else:
        # Relayed as sent: the upstream kept the thread, and its ids are the ones the SDK saw.
        exchanges = upstream.requests(ANTHROPIC_PATH)
        assert [exchange.body["thread"] for exchange in exchanges] == [b["thread"] for b in sent]
        assert first["id"] == "msg_threaded_1"


@pytest.mark.parametrize("stream", STREAMS)
def test_the_tool_runner_on_the_demo_kind(proxy: RunningProxy, stream: bool) -> None:
    answers, sent = run_tool_runner(proxy, "demo", stream=stream)
    assert answers[0]["stop_reason"] == "tool_use"
    assert answers[-1]["stop_reason"] == "end_turn"
    assert all(body["thread"]["type"] == "continue" for body in sent[1:])
