"""The Vercel AI SDK (npm `ai` and `@ai-sdk/openai`, installed by .ci/run into .cache/ai-sdk) on
its defaults, `createOpenAI({baseURL})` at a real proxy process: `openai(model)` is the Responses
API model; generateText and streamText run a two-step tool loop (a tool call, then text) in front
of an openai-kind chat completions mock, a validating anthropic-kind and a validating gemini-kind
mock (the same turns in their formats), with `store` left as is (the SDK then sends earlier
assistant text back as `item_reference`s the proxy resolves from its store) and with
providerOptions `openai: {store: false}` (it sends the items whole); each upstream must get the
whole conversation in its own shape. The three-turn chat (issue 29) runs on the cloud kinds too
(issue 30): Claude on Bedrock (SigV4, every signature and Converse body checked by the Bedrock
double) and Gemini on Vertex AI (a token from the token endpoint double)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    REPO,
    SECRETS,
    RunningProxy,
    every_kind_config,
    run_proxy,
)
from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_anthropic import MockAnthropic, message_events
from tests.helpers.mock_anthropic import message as anthropic_message
from tests.helpers.mock_bedrock import (
    AWS_ENVIRONMENT,
    MockBedrock,
    converse_answer,
    converse_stream,
)
from tests.helpers.mock_gemini import SIGNATURE, MockGemini, gemini_answer, issued_signatures
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
from tests.helpers.mock_vertex import MockVertex

pytestmark = pytest.mark.e2e

AI_SDK_MODULES = REPO / ".cache" / "ai-sdk" / "node_modules"
SCRIPT = Path(__file__).parent / "ai_sdk" / "tool_loop.mjs"
CHAT_SCRIPT = Path(__file__).parent / "ai_sdk" / "chat.mjs"
PREAMBLE = "Let me check the weather."
CITIES = ("Paris", "Berlin")
FORECAST = "sunny, 21 C"  # what the script's tool returns
ANSWER_PREFIX = "Here is what the tool said: "
QUESTION = "What is the weather in Paris?"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
WELCOME = "You are welcome."


def call_id(city: str) -> str:
    return f"call_ai_sdk_{city.lower()}"


def call_arguments(city: str) -> str:
    return json.dumps({"city": city})


CALL_ID = call_id("Paris")


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


def tool_turn(city: str, stream: bool) -> Reply:
    """Some text, then a call of get_weather for `city`."""
    arguments = call_arguments(city)
    call = {"id": call_id(city), "type": "function", "function": {"name": "get_weather"}}
    if not stream:
        whole = {**call, "function": {"name": "get_weather", "arguments": arguments}}
        message = {"role": "assistant", "content": PREAMBLE, "tool_calls": [whole]}
        return Reply(json=_completion(message, "tool_calls"))
    first = {**call, "index": 0, "function": {"name": "get_weather", "arguments": ""}}
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": PREAMBLE}),
        _chunk({"tool_calls": [first]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:9]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[9:]}}]}),
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


def scripted(last: tuple[str | None, str | None]) -> tuple[str, str]:
    """What every kind's script answers to the conversation's last turn (a user's text, or a
    tool's result): ("call", city) for a question naming a city, else ("text", answer)."""
    question, result = last
    if result is not None:
        return "text", ANSWER_PREFIX + result
    for city in CITIES:
        if question is not None and city in question:
            return "call", city
    return "text", WELCOME


def last_turn(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """The conversation's last turn, whatever the kind: (the user's text, None), or (None, the
    tool's result)."""
    turns = body.get("messages") or body.get("contents") or [{}]
    last = turns[-1]
    if last.get("role") == "tool":
        return None, str(last["content"])
    for part in last.get("parts") or ():
        if "functionResponse" in part:
            return None, json.dumps(part["functionResponse"]["response"], separators=(",", ":"))
    content = last.get("content")
    if isinstance(content, str):
        return content, None
    texts: list[str] = []
    for block in content if isinstance(content, list) else last.get("parts") or ():
        if "toolResult" in block:  # Converse (bedrock)
            result = block["toolResult"]["content"][0]
            return None, json.dumps(
                result["json"], separators=(",", ":")
            ) if "json" in result else result["text"]
        if block.get("type") == "tool_result":
            result = block.get("content") or ""
            return None, result if isinstance(result, str) else "".join(b["text"] for b in result)
        texts.append(block.get("text") or "")
    return "".join(texts), None


class ScriptedOpenAI(MockUpstream):
    """Calls get_weather for the city a question names, answers a tool's result with it."""

    def __init__(self) -> None:
        super().__init__(screen=self._reply)

    def _reply(self, exchange: Exchange) -> Reply | None:
        if exchange.path != OPENAI_PATH or not isinstance(exchange.body, dict):
            return None
        stream = bool(exchange.body.get("stream"))
        kind, what = scripted(last_turn(exchange.body))
        return tool_turn(what, stream) if kind == "call" else text_turn(what, stream)


class ScriptedAnthropic(MockAnthropic):
    """The same script in the Messages API's format, screened as Anthropic screens requests."""

    def __init__(self) -> None:
        super().__init__(ANTHROPIC_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        kind, what = scripted(last_turn(exchange.body))
        if kind == "call":
            use = {"type": "tool_use", "id": call_id(what), "name": "get_weather"}
            use["input"] = {"city": what}
            whole = anthropic_message([{"type": "text", "text": PREAMBLE}, use], "tool_use")
        else:
            whole = anthropic_message([{"type": "text", "text": what}], "end_turn")
        if exchange.body.get("stream"):
            return Reply(frames=anthropic_frames(message_events(whole)))
        return Reply(json=whole)


class ScriptedGemini(MockGemini):
    """The same script in Gemini's format (the call signed), screened as Gemini screens
    requests (its signature must come back)."""

    def __init__(self) -> None:
        super().__init__(GEMINI_KEY)

    def _screen(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen(exchange)
        if refusal is not None:
            return refusal
        kind, what = scripted(last_turn(exchange.body))
        if kind == "call":
            signed = {"functionCall": {"name": "get_weather", "args": {"city": what}}}
            parts: list[dict[str, Any]] = [
                {"text": PREAMBLE},
                signed | {"thoughtSignature": SIGNATURE},
            ]
        else:
            parts = [{"text": what[:10]}, {"text": what[10:]}]
        if "streamGenerateContent" not in exchange.path:
            reply = Reply(json=gemini_answer(parts))
        else:
            frames = [Frame(gemini_answer([part], finish=None)) for part in parts]
            reply = Reply(frames=[*frames, Frame(gemini_answer([{"text": ""}]))])
        self.issued.update(issued_signatures(reply))
        return reply


class ScriptedBedrock(MockBedrock):
    """The same script as Converse answers; the double checks every signature and body."""

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        answered = super()._screen_request(exchange)
        if answered is not None:
            return answered
        kind, what = scripted(last_turn(exchange.body))
        calls = [(call_id(what), "get_weather", {"city": what})] if kind == "call" else []
        text = PREAMBLE if kind == "call" else what
        if exchange.path.partition("?")[0].endswith("/converse-stream"):
            return converse_stream(text, calls)
        return converse_answer(text, calls)


class ScriptedVertexGemini(MockVertex):
    """The same script as Gemini on Vertex answers; the double checks the token and body."""

    def __init__(self, tokens: GoogleTokenServer) -> None:
        super().__init__(lambda token: token in tokens.issued)

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        refusal = super()._screen_request(exchange)
        if refusal is not None:
            return refusal
        kind, what = scripted(last_turn(exchange.body))
        if kind == "call":
            call = {"functionCall": {"name": "get_weather", "args": {"city": what}}}
            parts: list[dict[str, Any]] = [{"text": PREAMBLE}, call]
        else:
            parts = [{"text": what[:10]}, {"text": what[10:]}]
        if "streamGenerateContent" not in exchange.path:
            return Reply(json=gemini_answer(parts))
        frames = [Frame(gemini_answer([part], finish=None)) for part in parts]
        return Reply(frames=[*frames, Frame(gemini_answer([{"text": ""}]))])


Upstreams = dict[str, MockUpstream]


@pytest.fixture(scope="module")
def tokens() -> Iterator[GoogleTokenServer]:
    with GoogleTokenServer(ServiceAccount.generate()) as server:
        yield server


@pytest.fixture(scope="module")
def upstreams(tokens: GoogleTokenServer) -> Iterator[Upstreams]:
    with (
        ScriptedOpenAI() as oa,
        ScriptedAnthropic() as an,
        ScriptedGemini() as gm,
        ScriptedBedrock() as aws,
        ScriptedVertexGemini(tokens) as gcp,
    ):
        yield {"openai": oa, "anthropic": an, "gemini": gm, "bedrock": aws, "vertex": gcp}


@pytest.fixture(scope="module")
def proxy(
    upstreams: Upstreams, tokens: GoogleTokenServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningProxy]:
    """One proxy for the module: a model per kind (Bedrock and Vertex AI among them), and the
    demo."""
    oa, an, gm, aws, gcp = (upstreams[kind].base_url for kind in upstreams)
    directory = tmp_path_factory.mktemp("ai-sdk-proxy")
    key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
    config = every_kind_config(
        oa,
        an,
        gm,
        more_providers=f"""
  aws: {{kind: bedrock, region: us-east-1, base_url: "{aws}"}}
  gcp: {{kind: vertex, project: test-project, region: us-east5, base_url: "{gcp}",
        credentials: "{key_file}"}}""",
        more_models=f"""
  - {{name: claude-bedrock, provider: aws, model: "{BEDROCK_MODEL}", max_tokens: 1024}}
  - {{name: gemini-vertex, provider: gcp, model: gemini-2.5-flash}}""",
    )
    with run_proxy(config, directory, env=AWS_ENVIRONMENT) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(upstreams: Upstreams) -> None:
    for upstream in upstreams.values():
        upstream.reset()


def run_tool_loop(proxy: RunningProxy, model: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = run_script(SCRIPT, proxy, model)["runs"]
    return runs


def run_script(script: Path, proxy: RunningProxy, model: str) -> dict[str, Any]:
    """What one of the node scripts printed, run on the AI SDK against the proxy."""
    node = shutil.which("node")
    if node is None or not AI_SDK_MODULES.joinpath("ai").exists():
        pytest.fail(
            f"node and the AI SDK in {AI_SDK_MODULES} are needed: `bash .ci/run` installs them "
            "(npm install --prefix .cache/ai-sdk ai @ai-sdk/openai)"
        )
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TOOLRELAY"))}
    done = subprocess.run(
        [node, str(script), proxy.base_url, CLIENT_KEY, model],
        env=environ | {"AI_SDK_MODULES": str(AI_SDK_MODULES)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"the AI SDK script failed:\n{done.stderr}\n{done.stdout}"
    for secret in SECRETS:
        assert secret not in done.stdout
    printed: dict[str, Any] = json.loads(done.stdout)
    return printed


def openai_conversation(body: dict[str, Any]) -> list[Any]:
    seen: list[Any] = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        calls = [
            (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in message.get("tool_calls") or []
        ]
        if message["role"] == "tool":
            seen.append(("tool", message["tool_call_id"], json.loads(content)))
        else:
            seen.append((message["role"], content, calls) if calls else (message["role"], content))
    return seen


def anthropic_conversation(body: dict[str, Any]) -> list[Any]:
    """Text, tool_use and tool_result blocks by message."""
    seen: list[Any] = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        what: list[Any] = []
        for block in blocks:
            if block["type"] == "text":
                what.append(("text", block["text"]))
            elif block["type"] == "tool_use":
                what.append(("tool_use", block["id"], block["name"], block["input"]))
            else:
                assert block["type"] == "tool_result", block
                result = block["content"]
                if not isinstance(result, str):
                    result = "".join(part["text"] for part in result)
                what.append(("tool_result", block["tool_use_id"], json.loads(result)))
        seen.append((message["role"], what))
    return seen


def gemini_conversation(body: dict[str, Any]) -> list[Any]:
    """Text, functionCall and functionResponse parts by content."""
    seen: list[Any] = []
    for content in body["contents"]:
        what: list[Any] = []
        for part in content["parts"]:
            if "functionCall" in part:
                call = part["functionCall"]
                what.append(("functionCall", call["name"], call["args"]))
            elif "functionResponse" in part:
                response = part["functionResponse"]
                what.append(("functionResponse", response["name"], response["response"]))
            else:
                what.append(("text", part["text"]))
        seen.append((content["role"], what))
    return seen


RESULT = {"city": "Paris", "forecast": FORECAST}
ARGUMENTS = {"city": "Paris"}
EXPECTED_CONVERSATIONS: dict[str, tuple[Any, list[Any]]] = {
    "openai": (
        openai_conversation,
        [
            ("user", QUESTION),
            ("assistant", PREAMBLE, [(CALL_ID, "get_weather", ARGUMENTS)]),
            ("tool", CALL_ID, RESULT),
        ],
    ),
    "anthropic": (
        anthropic_conversation,
        [
            ("user", [("text", QUESTION)]),
            ("assistant", [("text", PREAMBLE), ("tool_use", CALL_ID, "get_weather", ARGUMENTS)]),
            ("user", [("tool_result", CALL_ID, RESULT)]),
        ],
    ),
    "gemini": (
        gemini_conversation,
        [
            ("user", [("text", QUESTION)]),
            ("model", [("text", PREAMBLE), ("functionCall", "get_weather", ARGUMENTS)]),
            ("user", [("functionResponse", "get_weather", RESULT)]),
        ],
    ),
}
KINDS = [
    pytest.param("openai", "mini", id="openai"),
    pytest.param("anthropic", "claude", id="anthropic"),
    pytest.param("gemini", "gem", id="gemini"),
]


def upstream_requests(upstreams: Upstreams, kind: str) -> list[Exchange]:
    upstream = upstreams[kind]
    if isinstance(upstream, MockGemini):
        return upstream.gemini_requests()
    if kind in ("bedrock", "vertex"):
        return list(upstream.exchanges)
    return upstream.requests(ANTHROPIC_PATH if kind == "anthropic" else OPENAI_PATH)


@pytest.mark.parametrize(("kind", "model"), KINDS)
def test_tool_loop_through_each_kind(
    upstreams: Upstreams, proxy: RunningProxy, kind: str, model: str
) -> None:
    runs = run_tool_loop(proxy, model)

    assert [(run["mode"], run["store"]) for run in runs] == [
        ("generateText", None),
        ("streamText", None),
        ("generateText", False),
        ("streamText", False),
    ]
    for run in runs:
        label = f"{kind} {run['mode']} store={run['store']}"
        assert run["executed"] == [ARGUMENTS], label
        first, second = run["steps"]
        assert first["finishReason"] == "tool-calls", label
        assert first["text"] == PREAMBLE, label
        [call] = first["toolCalls"]
        # A gemini call has no id: the proxy makes one up.
        assert call["id"] == CALL_ID or (kind == "gemini" and call["id"]), label
        assert (call["name"], call["input"]) == ("get_weather", ARGUMENTS), label
        assert second["toolCalls"] == [], label
        assert second["finishReason"] == "stop", label
        # The tool's result came back to the model: its answer quotes it.
        assert run["text"].startswith(ANSWER_PREFIX), label
        assert json.loads(run["text"].removeprefix(ANSWER_PREFIX)) == RESULT, label
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
        assert run["sent"][1]["input"][2]["call_id"] == call["id"], label

    exchanges = upstream_requests(upstreams, kind)
    assert len(exchanges) == 2 * len(runs)
    streamed = [run["mode"] == "streamText" for run in runs for _ in range(2)]
    assert [("stream" in e.path or bool(e.body.get("stream"))) for e in exchanges] == streamed
    conversation, expected = EXPECTED_CONVERSATIONS[kind]
    for exchange in exchanges[1::2]:
        assert conversation(exchange.body) == expected


def test_tool_loop_on_demo_kind(proxy: RunningProxy) -> None:
    for run in run_tool_loop(proxy, "demo"):
        label = f"{run['mode']} store={run['store']}"
        assert len(run["executed"]) == 1, label
        assert [call["name"] for call in run["steps"][0]["toolCalls"]] == ["get_weather"], label
        assert FORECAST in run["text"], label


def chat_conversation(kind: str, turns: int) -> list[Any]:
    """The conversation an upstream gets on a chat's turn `turns` (1, 2 or 3), in the shape
    its kind's normalizer gives: each tool turn's question, text and call, result and answer;
    then the thanks."""
    questions = ["What is the weather in Paris?", "And in Berlin?", "Thanks!"]
    expected: list[Any] = []
    for question, city in list(zip(questions, CITIES, strict=False))[: min(turns, 2)]:
        result = {"city": city, "forecast": FORECAST}
        answer = ANSWER_PREFIX + json.dumps(result, separators=(",", ":"))
        arguments = {"city": city}
        if kind == "openai":
            expected += [
                ("user", question),
                ("assistant", PREAMBLE, [(call_id(city), "get_weather", arguments)]),
                ("tool", call_id(city), result),
                ("assistant", answer),
            ]
        elif kind == "anthropic":
            use = ("tool_use", call_id(city), "get_weather", arguments)
            expected += [
                ("user", [("text", question)]),
                ("assistant", [("text", PREAMBLE), use]),
                ("user", [("tool_result", call_id(city), result)]),
                ("assistant", [("text", answer)]),
            ]
        elif kind == "bedrock":
            use = ("toolUse", call_id(city), "get_weather", arguments)
            expected += [
                ("user", [("text", question)]),
                ("assistant", [("text", PREAMBLE), use]),
                ("user", [("toolResult", call_id(city), result)]),
                ("assistant", [("text", answer)]),
            ]
        else:  # gemini, and Gemini on Vertex
            expected += [
                ("user", [("text", question)]),
                ("model", [("text", PREAMBLE), ("functionCall", "get_weather", arguments)]),
                ("user", [("functionResponse", "get_weather", result)]),
                ("model", [("text", answer)]),
            ]
    if turns == 3:
        expected.append(
            ("user", "Thanks!") if kind == "openai" else ("user", [("text", "Thanks!")])
        )
    return expected


def bedrock_conversation(body: dict[str, Any]) -> list[Any]:
    """Text, toolUse and toolResult blocks by Converse turn."""
    seen: list[Any] = []
    for turn in body["messages"]:
        what: list[Any] = []
        for block in turn["content"]:
            if "toolUse" in block:
                use = block["toolUse"]
                what.append(("toolUse", use["toolUseId"], use["name"], use["input"]))
            elif "toolResult" in block:
                result = block["toolResult"]
                value = result["content"][0]
                what.append(
                    ("toolResult", result["toolUseId"], value.get("json", value.get("text")))
                )
            elif "text" in block:  # a cachePoint (prompt caching) is no content
                what.append(("text", block["text"]))
        seen.append((turn["role"], what))
    return seen


CHAT_NORMALIZERS = {
    **{kind: normalizer for kind, (normalizer, _) in EXPECTED_CONVERSATIONS.items()},
    "bedrock": bedrock_conversation,
    "vertex": gemini_conversation,
}
CLOUD_KINDS = [
    pytest.param("bedrock", "claude-bedrock", id="bedrock"),
    pytest.param("vertex", "gemini-vertex", id="vertex"),
]


@pytest.mark.parametrize(("kind", "model"), [*KINDS, *CLOUD_KINDS])
def test_a_three_turn_chat_through_each_kind(
    upstreams: Upstreams, proxy: RunningProxy, kind: str, model: str
) -> None:
    """Issue 29: every turn sends the whole conversation so far, earlier output by reference
    when stored; the third turn must still find every item the first two produced."""
    chats = run_script(CHAT_SCRIPT, proxy, model)["chats"]

    assert [(chat["mode"], chat["store"]) for chat in chats] == [
        ("generateText", None),
        ("streamText", None),
        ("generateText", False),
        ("streamText", False),
    ]
    for chat in chats:
        label = f"{kind} {chat['mode']} store={chat['store']}"
        turns = chat["turns"]
        assert [turn.get("failed") for turn in turns] == [None] * 3, label
        for turn, city in zip(turns[:2], CITIES, strict=True):
            assert turn["executed"] == [{"city": city}], label
            assert [step["finishReason"] for step in turn["steps"]] == ["tool-calls", "stop"]
            answer = json.loads(turn["text"].removeprefix(ANSWER_PREFIX))
            assert answer == {"city": city, "forecast": FORECAST}, label
        assert turns[2]["text"] == WELCOME, label
        if chat["mode"] == "streamText":
            assert [turn["errors"] for turn in turns] == [[], [], []], label
        third = [item.get("type", "message") for item in turns[2]["sent"][0]["input"]]
        if chat["store"] is None:  # earlier output by reference, on every turn after the first
            assert third.count("item_reference") >= 2, (label, third)
        else:
            assert "item_reference" not in third, label

    conversation = CHAT_NORMALIZERS[kind]
    exchanges = upstream_requests(upstreams, kind)
    assert len(exchanges) == 5 * len(chats)  # two tool turns of two steps, then the thanks
    for chat_exchanges in (exchanges[n : n + 5] for n in range(0, len(exchanges), 5)):
        assert conversation(chat_exchanges[4].body) == chat_conversation(kind, 3)
        assert conversation(chat_exchanges[3].body)[:4] == chat_conversation(kind, 2)[:4]


def test_a_three_turn_chat_on_demo_kind(proxy: RunningProxy) -> None:
    for chat in run_script(CHAT_SCRIPT, proxy, "demo")["chats"]:
        label = f"{chat['mode']} store={chat['store']}"
        turns = chat["turns"]
        assert [turn.get("failed") for turn in turns] == [None] * 3, label
        for turn in turns:
            assert turn["text"], label
        assert [len(turn["executed"]) for turn in turns[:2]] == [1, 1], label
