"""The official `openai` SDK's Responses API (`client.responses.create` and
`client.responses.stream()` + `get_final_response()`) against a real proxy process on
/v1/responses, in front of an OpenAI-compatible mock, a validating Anthropic mock and a
validating Gemini mock: text, one and parallel function calls, a tool loop by full history and
by `previous_response_id`, a custom tool, structured output, Anthropic thinking round-tripped in
`encrypted_content`, `max_output_tokens` -> incomplete, upstream errors, a disconnect closing
the upstream, and stored responses. Every stream is checked event by event
(tests/helpers/responses_stream.py) and its final response against the `response.completed`
event's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import ResponseOutputItem
from pydantic import BaseModel, TypeAdapter

from tests.e2e.conftest import (
    ANTHROPIC_KEY,
    CLIENT_KEY,
    GEMINI_KEY,
    PROVIDER_KEY,
    RunningProxy,
    keyed_config,
    run_proxy,
    sdk_client,
)
from tests.helpers.mock_anthropic import (
    MockAnthropic,
    anthropic_error,
    message,
    message_events,
    thinking_block,
    thinking_text_message,
    thinking_tool_message,
)
from tests.helpers.mock_gemini import (
    SIGNATURE,
    USAGE_METADATA,
    MockGemini,
    gemini_answer,
    gemini_error,
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
from tests.helpers.responses_stream import assert_responses_stream, parse_responses_sse
from tests.helpers.upstream_answers import CALLS, USAGE

pytestmark = pytest.mark.e2e

KINDS = ["gpt", "claude", "gemini"]
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
EACH_KIND = pytest.mark.parametrize("kind", KINDS)
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TIME: Any = {
    "type": "function",
    "name": "get_time",
    "description": "Local time in a timezone.",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {"type": "string"}, "hours24": {"type": "boolean"}},
        "required": ["timezone", "hours24"],
    },
}
TOOLS = [WEATHER, TIME]
PATCH_TOOL: Any = {"type": "custom", "name": "apply_patch", "description": "Apply a patch."}
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"
QUESTION = "Weather in Paris and time in Tokyo?"
PARALLEL = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]
CITY_FORMAT: Any = {
    "format": {
        "type": "json_schema",
        "name": "city",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
            "additionalProperties": False,
        },
        "strict": True,
    }
}
OUTPUT_ITEM: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)
SDK_ADDED = {"snapshot", "parsed", "parsed_arguments"}  # fields the SDK's accumulator adds


@dataclass(frozen=True)
class Answer:
    """What the upstream answers, written once and played in each kind's own wire format."""

    text: str = ""
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    truncated: bool = False  # stopped by the output token limit


@dataclass(frozen=True)
class Upstreams:
    oa: MockUpstream
    gemini: MockGemini
    an: MockAnthropic

    def script(self, kind: str, answer: Answer, *, stream: bool, **frames_options: Any) -> None:
        """Queues `answer` for the next request to `kind`'s upstream; streamed, with
        `frames_options` (Reply's `hang_after`, `drop_after`)."""
        if kind == "gpt":
            frames, whole = openai_frames(openai_chunks(answer)), completion(answer)
        elif kind == "claude":
            whole = anthropic_message(answer)
            frames = anthropic_frames(message_events(whole))
        else:
            frames, whole = gemini_frames(answer), gemini_whole(answer)
        reply = Reply(frames=frames, **frames_options) if stream else Reply(json=whole)
        if kind == "gpt":
            self.oa.add(reply)
        elif kind == "claude":
            self.an.answer(reply)
        else:
            self.gemini.answer(reply, stream=stream)

    def fail(self, kind: str, status: int, *, stream: bool) -> None:
        headers = {"retry-after": "7"}
        if kind == "gpt":
            error = {"error": {"message": "upstream says no", "type": "server_error"}}
            self.oa.add(Reply(status, json=error, headers=headers))
        elif kind == "claude":
            error = anthropic_error("api_error", "upstream says no")
            self.an.answer(Reply(status, json=error, headers=headers))
        else:
            error = gemini_error(status, "UNAVAILABLE", "upstream says no")
            self.gemini.answer(Reply(status, json=error, headers=headers), stream=stream)

    def exchanges(self, kind: str) -> list[Exchange]:
        if kind == "gpt":
            return self.oa.requests(OPENAI_PATH)
        if kind == "claude":
            return self.an.requests(ANTHROPIC_PATH)
        return self.gemini.gemini_requests()

    def sent(self, kind: str) -> dict[str, Any]:
        """The body of the last request the upstream got."""
        body: dict[str, Any] = self.exchanges(kind)[-1].body
        return body


# --- the upstreams' wire formats ----------------------------------------------------------------


def completion(answer: Answer) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(args)}}
        for i, n, args in answer.calls
    ]
    reply: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        reply["tool_calls"] = calls
    choice = {"index": 0, "message": reply, "finish_reason": openai_finish(answer)}
    return _openai_envelope("chat.completion") | {"choices": [choice], "usage": USAGE}


def openai_chunks(answer: Answer) -> list[dict[str, Any]]:
    """Text in two deltas; each call's name first, then its arguments in two fragments; the
    finish, then usage in a chunk of its own (PROTOCOLS A.5)."""
    chunks = [_openai_chunk({"role": "assistant", "content": ""})]
    chunks += [_openai_chunk({"content": part}) for part in halves(answer.text) if part]
    for index, (call_id, name, args) in enumerate(answer.calls):
        first = {"index": index, "id": call_id, "type": "function"}
        chunks.append(_openai_chunk({"tool_calls": [first | {"function": {"name": name}}]}))
        for fragment in halves(json.dumps(args)):
            later = {"index": index, "function": {"arguments": fragment}}
            chunks.append(_openai_chunk({"tool_calls": [later]}))
    chunks.append(_openai_chunk({}, openai_finish(answer)))
    return [*chunks, _openai_envelope("chat.completion.chunk") | {"choices": [], "usage": USAGE}]


def openai_finish(answer: Answer) -> str:
    return "length" if answer.truncated else "tool_calls" if answer.calls else "stop"


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _openai_envelope("chat.completion.chunk") | {"choices": [choice]}


def _openai_envelope(kind: str) -> dict[str, Any]:
    return {"id": "chatcmpl-upstream-9", "object": kind, "created": 1727346178, "model": "gpt-4o"}


def anthropic_message(answer: Answer) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in answer.calls]
    stop = "max_tokens" if answer.truncated else "tool_use" if answer.calls else "end_turn"
    return message(blocks, stop)


def gemini_parts(answer: Answer) -> list[dict[str, Any]]:
    """Text, then the calls, the first signed as Gemini does (C.6)."""
    parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
    for position, (_, name, args) in enumerate(answer.calls):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if position == 0:
            part["thoughtSignature"] = SIGNATURE
        parts.append(part)
    return parts


def gemini_finish(answer: Answer) -> str:
    return "MAX_TOKENS" if answer.truncated else "STOP"


def gemini_whole(answer: Answer) -> dict[str, Any]:
    return gemini_answer(gemini_parts(answer), finish=gemini_finish(answer))


def gemini_frames(answer: Answer) -> list[Frame]:
    """Text in two frames, each call in a frame of its own, the finish in a last empty one."""
    early = {"promptTokenCount": 82, "totalTokenCount": 82}
    parts = [{"text": part} for part in halves(answer.text) if part]
    parts += [part for part in gemini_parts(answer) if "functionCall" in part]
    frames = [Frame(gemini_answer([part], finish=None, usage=early)) for part in parts]
    last = gemini_answer([{"text": ""}], finish=gemini_finish(answer), usage=USAGE_METADATA)
    return [*frames, Frame(last)]


def halves(text: str) -> tuple[str, str]:
    half = len(text) // 2
    return text[:half], text[half:]


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers() -> Iterator[Upstreams]:
    mocks = Upstreams(MockUpstream(), MockGemini(GEMINI_KEY), MockAnthropic(ANTHROPIC_KEY))
    with mocks.oa, mocks.gemini, mocks.an:
        yield mocks


@pytest.fixture
def upstreams(servers: Upstreams) -> Upstreams:
    for server in (servers.oa, servers.gemini, servers.an):
        server.reset()
    return servers


@pytest.fixture(scope="module")
def proxy(servers: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProxy]:
    config = keyed_config(
        f"""  oa: {{kind: openai, base_url: "{servers.oa.base_url}/v1", api_key: {PROVIDER_KEY}}}
  gm: {{kind: gemini, base_url: "{servers.gemini.base_url}", api_key: {GEMINI_KEY}}}
  an: {{kind: anthropic, base_url: "{servers.an.base_url}", api_key: {ANTHROPIC_KEY}}}""",
        """  - {name: gpt, provider: oa, model: gpt-4o-mini, max_output_tokens: 16384}
  - {name: gemini, provider: gm, model: gemini-2.5-flash}
  - {name: claude, provider: an, model: claude-sonnet-4-5}""",
    )
    with run_proxy(config, tmp_path_factory.mktemp("responses-face")) as running:
        yield running


@pytest.fixture(scope="module")
def client(proxy: RunningProxy) -> Iterator[openai.OpenAI]:
    with sdk_client(proxy) as sdk:
        yield sdk


# --- asking -------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A dumped SDK object without the fields the SDK's accumulator adds."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in SDK_ADDED}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def ask(client: openai.OpenAI, *, stream: bool, **fields: Any) -> dict[str, Any]:
    """One answer as a dict. Streamed: every event checked, and the SDK's final response
    equal to the `response.completed` event's (a stream that ends otherwise has none: its
    last event's response is returned)."""
    if not stream:
        created: dict[str, Any] = client.responses.create(**fields).to_dict()
        return created
    with client.responses.stream(**fields) as events:
        received = list(events)
        raw = [plain(event.to_dict(warnings=False)) for event in received]
        last = assert_responses_stream(raw)
        if received[-1].type != "response.completed":
            with pytest.raises(RuntimeError, match=r"response\.completed"):
                events.get_final_response()
            return last
        final = events.get_final_response()
    completed: Any = received[-1]
    assert final.model_dump(warnings=False) == completed.response.model_dump(warnings=False)
    assert plain(final.to_dict(warnings=False)) == last
    return last


def without_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items modulo their ids, a call's arguments as the JSON they stand for (an upstream's
    streamed fragments keep its spacing; a whole answer's object is serialized by the proxy)."""
    kept = [{k: v for k, v in item.items() if k not in ("id", "call_id")} for item in items]
    return [
        item | {"arguments": json.loads(item["arguments"])} if "arguments" in item else item
        for item in kept
    ]


def calls_of(response: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (item["call_id"], item["name"], json.loads(item["arguments"]))
        for item in response["output"]
        if item["type"] == "function_call"
    ]


def named_calls(response: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(name, arguments) for _, name, arguments in calls_of(response)]


def declared_tools(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Tool name -> its parameter schema, as the upstream got them."""
    if kind == "gpt":
        return {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    if kind == "claude":
        return {tool["name"]: tool["input_schema"] for tool in body["tools"]}
    declarations = [d for tool in body["tools"] for d in tool.get("functionDeclarations", [])]
    return {d["name"]: d.get("parametersJsonSchema") or d.get("parameters") for d in declarations}


def roles(kind: str, body: dict[str, Any]) -> list[str]:
    if kind == "gemini":
        return [content["role"] for content in body["contents"]]
    return [m["role"] for m in body["messages"]]


# --- text, calls, stream against non-stream -----------------------------------------------------


@EACH_KIND
@STREAMS
def test_text(upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool) -> None:
    upstreams.script(kind, Answer(text="Sunny in Paris."), stream=stream)
    response = ask(client, stream=stream, model=kind, input=QUESTION, instructions="Be brief.")
    assert response["status"] == "completed"
    assert response["model"] == kind
    assert response["id"].startswith("resp_")
    (item,) = response["output"]
    assert item["type"] == "message"
    assert item["id"].startswith("msg_")
    assert item["content"] == [
        {"type": "output_text", "text": "Sunny in Paris.", "annotations": [], "logprobs": []}
    ]
    assert response["usage"]["input_tokens"] > 0
    assert response["usage"]["output_tokens"] > 0
    assert response["instructions"] == "Be brief."
    sent = upstreams.sent(kind)
    if kind == "gpt":
        assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
        assert sent["model"] == "gpt-4o-mini"
    elif kind == "claude":
        assert "Be brief." in json.dumps(sent["system"])
    else:
        assert sent["systemInstruction"]["parts"] == [{"text": "Be brief."}]


@EACH_KIND
@STREAMS
def test_one_function_call(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    call = ("call_weather_01", "get_weather", {"city": "Paris"})
    upstreams.script(kind, Answer(calls=(call,)), stream=stream)
    response = ask(client, stream=stream, model=kind, input=QUESTION, tools=TOOLS)
    assert response["status"] == "completed"
    (item,) = response["output"]
    assert item["type"] == "function_call"
    assert item["id"].startswith("fc_")
    assert item["status"] == "completed"
    assert named_calls(response) == [("get_weather", {"city": "Paris"})]
    if kind != "gemini":  # Gemini's calls have no ids: the proxy makes them
        assert item["call_id"] == "call_weather_01"
    assert declared_tools(kind, upstreams.sent(kind)).keys() == {"get_weather", "get_time"}


@EACH_KIND
@STREAMS
def test_parallel_calls_after_text(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    upstreams.script(kind, Answer(text="Checking both.", calls=tuple(PARALLEL)), stream=stream)
    response = ask(client, stream=stream, model=kind, input=QUESTION, tools=TOOLS)
    assert [item["type"] for item in response["output"]] == [
        "message",
        "function_call",
        "function_call",
    ]
    assert response["output"][0]["content"][0]["text"] == "Checking both."
    assert named_calls(response) == [(name, args) for _, name, args in PARALLEL]
    if kind != "gemini":
        assert calls_of(response) == PARALLEL
    assert len({item["call_id"] for item in response["output"][1:]}) == 2


@EACH_KIND
@pytest.mark.parametrize(
    "answer",
    [
        Answer(text="Sunny in Paris."),
        Answer(calls=tuple(PARALLEL)),
        Answer(text="Checking both.", calls=tuple(PARALLEL)),
    ],
    ids=["text", "calls", "text-and-calls"],
)
def test_stream_and_create_give_the_same_output(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, answer: Answer
) -> None:
    upstreams.script(kind, answer, stream=False)
    upstreams.script(kind, answer, stream=True)
    whole = ask(client, stream=False, model=kind, input=QUESTION, tools=TOOLS)
    streamed = ask(client, stream=True, model=kind, input=QUESTION, tools=TOOLS)
    assert without_ids(streamed["output"]) == without_ids(whole["output"])
    assert streamed["usage"] == whole["usage"]
    for field in ("status", "model", "tools", "tool_choice", "parallel_tool_calls", "text"):
        assert streamed[field] == whole[field], field


def test_interleaved_call_fragments_still_stream_one_item_at_a_time(
    upstreams: Upstreams, client: openai.OpenAI
) -> None:
    """Both calls opened before either's arguments (as some OpenAI-compatible servers send
    them), fragments alternating: the items still come one after another, whole."""
    chunks = [_openai_chunk({"role": "assistant", "content": ""})]
    for index, (call_id, name, _) in enumerate(PARALLEL):
        opening = {"index": index, "id": call_id, "type": "function", "function": {"name": name}}
        chunks.append(_openai_chunk({"tool_calls": [opening]}))
    fragments = [halves(json.dumps(arguments)) for _, _, arguments in PARALLEL]
    for half in (0, 1):
        for index, parts in enumerate(fragments):
            later = {"index": index, "function": {"arguments": parts[half]}}
            chunks.append(_openai_chunk({"tool_calls": [later]}))
    chunks.append(_openai_chunk({}, "tool_calls"))
    upstreams.oa.add(Reply(frames=openai_frames(chunks)))
    response = ask(client, stream=True, model="gpt", input=QUESTION, tools=TOOLS)
    assert calls_of(response) == PARALLEL


# --- tool loops ---------------------------------------------------------------------------------


def results_for(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function_call_output", "call_id": call_id, "output": f"{name} ok"}
        for call_id, name, _ in calls_of(response)
    ]


def assert_loop_reached_the_upstream(
    upstreams: Upstreams, kind: str, first: dict[str, Any]
) -> None:
    """The second request carried the question, the calls and their results, and the
    validating mocks took both (each answer was one request)."""
    assert len(upstreams.exchanges(kind)) == 2
    sent = upstreams.sent(kind)
    if kind == "gpt":
        assert roles(kind, sent) == ["user", "assistant", "tool", "tool"]
        assistant = sent["messages"][1]
        assert assistant["content"] == "Checking both."
        assert [call["id"] for call in assistant["tool_calls"]] == [c for c, _, _ in PARALLEL]
        assert [m["tool_call_id"] for m in sent["messages"][2:]] == [c for c, _, _ in PARALLEL]
        assert [m["content"] for m in sent["messages"][2:]] == ["get_weather ok", "get_time ok"]
    elif kind == "claude":
        assert roles(kind, sent) == ["user", "assistant", "user"]
        blocks = sent["messages"][1]["content"]
        assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"]
        results = sent["messages"][2]["content"]
        assert [r["tool_use_id"] for r in results] == [c for c, _, _ in PARALLEL]
    else:
        assert roles(kind, sent) == ["user", "model", "user"]
        model_parts = sent["contents"][1]["parts"]
        assert [p["functionCall"]["name"] for p in model_parts if "functionCall" in p] == [
            "get_weather",
            "get_time",
        ]
        assert model_parts[1].get("thoughtSignature") == SIGNATURE  # given back as issued
        answers = [p["functionResponse"]["name"] for p in sent["contents"][2]["parts"]]
        assert answers == ["get_weather", "get_time"]
    assert first["status"] == "completed"


def every_field(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as the SDK's type dumps it whole: every field, unset ones as null
    (`namespace: null`, `phase: null`...), as some clients send items back."""
    dumped: dict[str, Any] = OUTPUT_ITEM.validate_python(item).model_dump(
        mode="json", by_alias=True
    )
    return dumped


@EACH_KIND
@STREAMS
@pytest.mark.parametrize("echo", ["as-received", "every-field"])
def test_a_tool_loop_by_full_history(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool, echo: str
) -> None:
    upstreams.script(kind, Answer(text="Checking both.", calls=tuple(PARALLEL)), stream=stream)
    upstreams.script(kind, Answer(text="18 C; it is 9:00."), stream=stream)
    question: list[Any] = [{"role": "user", "content": QUESTION}]
    first = ask(client, stream=stream, model=kind, input=question, tools=TOOLS, store=False)
    given_back = first["output"] if echo == "as-received" else map(every_field, first["output"])
    history = [*question, *given_back, *results_for(first)]
    second = ask(client, stream=stream, model=kind, input=history, tools=TOOLS, store=False)
    assert second["output"][0]["content"][0]["text"] == "18 C; it is 9:00."
    assert_loop_reached_the_upstream(upstreams, kind, first)


@EACH_KIND
@STREAMS
def test_a_tool_loop_by_previous_response_id(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    upstreams.script(kind, Answer(text="Checking both.", calls=tuple(PARALLEL)), stream=stream)
    upstreams.script(kind, Answer(text="18 C; it is 9:00."), stream=stream)
    first = ask(
        client, stream=stream, model=kind, input=QUESTION, tools=TOOLS, instructions="Be brief."
    )
    second = ask(
        client,
        stream=stream,
        model=kind,
        input=results_for(first),
        tools=TOOLS,
        previous_response_id=first["id"],
    )
    assert second["previous_response_id"] == first["id"]
    assert second["output"][0]["content"][0]["text"] == "18 C; it is 9:00."
    assert_loop_reached_the_upstream(upstreams, kind, first)
    sent = upstreams.sent(kind)
    assert "Be brief." not in json.dumps(sent)  # instructions are not carried over


def test_input_tokens_are_counted(client: openai.OpenAI) -> None:
    counted = client.responses.input_tokens.count(model="gpt", input=QUESTION, tools=TOOLS)
    assert counted.object == "response.input_tokens"
    assert 10 < counted.input_tokens < 300


def test_an_unknown_previous_response_id_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt", input="hi", previous_response_id="resp_nope")
    error = caught.value.body
    assert error["param"] == "previous_response_id"  # type: ignore[index]
    assert error["code"] == "previous_response_not_found"  # type: ignore[index]


# --- custom tools and structured output ---------------------------------------------------------


@EACH_KIND
@STREAMS
def test_a_custom_tool(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    call = ("call_patch_01", "apply_patch", {"input": PATCH})
    upstreams.script(kind, Answer(calls=(call,)), stream=stream)
    response = ask(client, stream=stream, model=kind, input="Add a.txt", tools=[PATCH_TOOL])
    (item,) = response["output"]
    assert item["type"] == "custom_tool_call"
    assert (item["name"], item["input"]) == ("apply_patch", PATCH)
    if kind != "gemini":
        assert item["call_id"] == "call_patch_01"
    (schema,) = declared_tools(kind, upstreams.sent(kind)).values()
    assert schema["required"] == ["input"]
    assert list(schema["properties"]) == ["input"]
    assert schema["properties"]["input"]["type"].lower() == "string"

    upstreams.script(kind, Answer(text="Added."), stream=stream)
    output = {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "done"}
    history = [{"role": "user", "content": "Add a.txt"}, item, output]
    second = ask(client, stream=stream, model=kind, input=history, tools=[PATCH_TOOL])
    assert second["output"][0]["content"][0]["text"] == "Added."
    sent = json.dumps(upstreams.sent(kind))
    assert "done" in sent
    assert "Begin Patch" in sent
    assert len(upstreams.exchanges(kind)) == 2


@EACH_KIND
@STREAMS
def test_structured_output(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    upstreams.script(kind, Answer(text='{"city": "Paris", "celsius": 18}'), stream=stream)
    response = ask(client, stream=stream, model=kind, input="Where?", text=CITY_FORMAT)
    assert json.loads(response["output"][0]["content"][0]["text"]) == {
        "city": "Paris",
        "celsius": 18,
    }
    assert response["text"]["format"]["name"] == "city"
    sent = upstreams.sent(kind)
    if kind == "gpt":
        fmt = CITY_FORMAT["format"]
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "city", "schema": fmt["schema"], "strict": True},
        }
    elif kind == "claude":
        fmt = CITY_FORMAT["format"]
        assert sent["output_config"] == {"format": {"type": "json_schema", "schema": fmt["schema"]}}
    else:
        config = sent["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == CITY_FORMAT["format"]["schema"]
        assert "responseSchema" not in config


class City(BaseModel):
    city: str
    celsius: float


@EACH_KIND
def test_the_sdks_parse_helper_gets_its_model(
    upstreams: Upstreams, client: openai.OpenAI, kind: str
) -> None:
    upstreams.script(kind, Answer(text='{"city": "Paris", "celsius": 18}'), stream=False)
    parsed = client.responses.parse(model=kind, input="Where?", text_format=City)
    assert parsed.output_parsed == City(city="Paris", celsius=18)
    assert len(upstreams.exchanges(kind)) == 1  # the validating mock took the schema


def test_structured_output_on_anthropic_streams_as_output_text(
    upstreams: Upstreams, client: openai.OpenAI
) -> None:
    """Once refused (issue 20): `text.format` on an anthropic model is `output_config.format`,
    and the JSON comes back as the output text of a completed response, streamed too."""
    upstreams.script("claude", Answer(text='{"city": "Paris", "celsius": 18}'), stream=True)
    with client.responses.stream(model="claude", input="Where?", text_format=City) as events:
        final = events.get_final_response()
    assert final.status == "completed"
    assert final.output_parsed == City(city="Paris", celsius=18)
    assert upstreams.sent("claude")["output_config"]["format"]["type"] == "json_schema"


# --- reasoning ----------------------------------------------------------------------------------


THOUGHT = "I should read a.txt first."
READ_FILE: Any = {
    "type": "function",
    "name": "read_file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
LOOPS = {
    "encrypted": "Codex's way: nothing stored, the whole history back with each item as it came",
    "previous-response-id": "the first response stored, the second request chained to it",
    "id-only": "stored; the reasoning item sent back with only its id",
    "dropped": "nothing stored; the client drops the reasoning item (restored by call id)",
}


@STREAMS
@pytest.mark.parametrize("loop", list(LOOPS))
def test_anthropic_thinking_round_trips(
    upstreams: Upstreams, client: openai.OpenAI, stream: bool, loop: str
) -> None:
    """However the client brings the first turn back (LOOPS), its thinking reaches Anthropic
    first in its turn, byte-exact (the mock checks the signature and refuses otherwise)."""
    first_answer = thinking_tool_message(THOUGHT, [("toolu_01ReadA", "read_file", {"path": "a"})])
    final_answer = thinking_text_message("It said hello.", "a says hello.")
    for whole in (first_answer, final_answer):
        frames = anthropic_frames(message_events(whole))
        upstreams.an.answer(Reply(frames=frames) if stream else Reply(json=whole))
    stored = loop in ("previous-response-id", "id-only")
    fields: Any = {
        "model": "claude",
        "tools": [READ_FILE],
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": stored,
    }
    question: list[Any] = [{"role": "user", "content": "What does a say?"}]
    first = ask(client, stream=stream, input=question, **fields)
    reasoning, call = first["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["id"].startswith("rs_")
    assert reasoning["content"] == [{"type": "reasoning_text", "text": THOUGHT}]
    assert reasoning["encrypted_content"]
    assert call["type"] == "function_call"
    assert call["call_id"] == "toolu_01ReadA"

    result = {"type": "function_call_output", "call_id": "toolu_01ReadA", "output": "hello"}
    if loop == "previous-response-id":
        second_input: list[Any] = [result]
        fields["previous_response_id"] = first["id"]
    elif loop == "id-only":
        bare = {"type": "reasoning", "id": reasoning["id"], "summary": []}
        second_input = [*question, bare, call, result]
    elif loop == "dropped":
        second_input = [*question, call, result]
    else:
        second_input = [*question, *first["output"], result]
    second = ask(client, stream=stream, input=second_input, **fields)
    assert second["output"][-1]["content"][0]["text"] == "a says hello."
    assert second["output"][0]["type"] == "reasoning"

    first_sent, second_sent = (exchange.body for exchange in upstreams.an.exchanges)
    assert first_sent["thinking"]["type"] == "enabled"
    assert second_sent["thinking"]["type"] == "enabled"
    turn = second_sent["messages"][1]
    assert turn["role"] == "assistant"
    assert turn["content"][0] == thinking_block(THOUGHT)  # byte-exact, first in its turn
    assert [block["type"] for block in turn["content"]] == ["thinking", "tool_use"]


def test_thinking_streamed_and_whole_give_the_same_output(
    upstreams: Upstreams, client: openai.OpenAI
) -> None:
    whole = thinking_tool_message(THOUGHT, [("toolu_01ReadA", "read_file", {"path": "a"})])
    upstreams.an.answer(Reply(json=whole))
    upstreams.an.answer(Reply(frames=anthropic_frames(message_events(whole))))
    fields: Any = {
        "model": "claude",
        "input": "What does a say?",
        "tools": [READ_FILE],
        "reasoning": {"effort": "high"},
        "include": ["reasoning.encrypted_content"],
    }
    created = ask(client, stream=False, **fields)
    streamed = ask(client, stream=True, **fields)
    assert without_ids(streamed["output"]) == without_ids(created["output"])
    assert [item["type"] for item in created["output"]] == ["reasoning", "function_call"]


def test_encrypted_content_is_left_out_unless_included(
    upstreams: Upstreams, client: openai.OpenAI
) -> None:
    whole = thinking_text_message("Hmm.", "Hi.")
    upstreams.an.answer(Reply(json=whole))
    response = ask(client, stream=False, model="claude", input="Hi", reasoning={"effort": "low"})
    assert "encrypted_content" not in response["output"][0]
    assert response["output"][0]["content"] == [{"type": "reasoning_text", "text": "Hmm."}]


# --- max_output_tokens --------------------------------------------------------------------------


@EACH_KIND
@STREAMS
def test_max_output_tokens_makes_an_incomplete_response(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool
) -> None:
    upstreams.script(kind, Answer(text="Sunny in Pa", truncated=True), stream=stream)
    response = ask(client, stream=stream, model=kind, input=QUESTION, max_output_tokens=5)
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["max_output_tokens"] == 5
    (item,) = response["output"]
    assert item["status"] == "incomplete"
    assert item["content"][0]["text"] == "Sunny in Pa"
    sent = upstreams.sent(kind)
    if kind == "gpt":
        assert sent["max_completion_tokens"] == 5
    elif kind == "claude":
        assert sent["max_tokens"] == 5
    else:
        assert sent["generationConfig"]["maxOutputTokens"] == 5


# --- errors -------------------------------------------------------------------------------------


def create_or_stream(client: openai.OpenAI, *, stream: bool, **fields: Any) -> None:
    if not stream:
        client.responses.create(**fields)
        return
    with client.responses.stream(**fields) as events:
        list(events)


ERRORS = [
    (400, 400, openai.BadRequestError),
    (429, 429, openai.RateLimitError),
    (500, 502, openai.InternalServerError),
]


@EACH_KIND
@STREAMS
@pytest.mark.parametrize("error", ERRORS, ids=["400", "429", "500"])
def test_upstream_errors(
    upstreams: Upstreams, client: openai.OpenAI, kind: str, stream: bool, error: Any
) -> None:
    upstream_status, status, sdk_error = error
    upstreams.fail(kind, upstream_status, stream=stream)
    with pytest.raises(sdk_error) as caught:
        create_or_stream(client, stream=stream, model=kind, input=QUESTION)
    assert caught.value.status_code == status
    body: Any = caught.value.body
    assert isinstance(body, dict)
    assert body["message"]
    if upstream_status == 400:
        assert "upstream says no" in body["message"]
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "7"


@EACH_KIND
def test_a_failure_mid_stream_is_a_response_failed_event(
    upstreams: Upstreams, proxy: RunningProxy, kind: str
) -> None:
    upstreams.script(kind, Answer(text="A partial answer."), stream=True, drop_after=3)
    response = httpx.post(
        f"{proxy.base_url}/responses",
        json={"model": kind, "input": QUESTION, "stream": True},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=10,
    )
    assert response.status_code == 200
    events = parse_responses_sse(response.content)
    failed = assert_responses_stream(events)
    assert events[-1]["type"] == "response.failed"
    assert failed["status"] == "failed"


@EACH_KIND
def test_client_disconnect_closes_the_upstream_request(
    upstreams: Upstreams, client: openai.OpenAI, kind: str
) -> None:
    upstreams.script(kind, Answer(text="Sunny in Paris, all day long."), stream=True, hang_after=2)
    with client.responses.stream(model=kind, input=QUESTION) as events:
        next(iter(events))
    (exchange,) = upstreams.exchanges(kind)
    assert exchange.closed.wait(timeout=5), "the proxy kept the upstream request open"


# --- stored responses ---------------------------------------------------------------------------


@STREAMS
def test_a_stored_response_is_retrieved_listed_and_deleted(
    upstreams: Upstreams, client: openai.OpenAI, stream: bool
) -> None:
    upstreams.script("gpt", Answer(text="Sunny in Paris."), stream=stream)
    question: Any = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "user", "content": [{"type": "input_text", "text": "Briefly."}]},
    ]
    created = ask(client, stream=stream, model="gpt", input=question, instructions="Be brief.")

    retrieved = client.responses.retrieve(created["id"]).to_dict()
    assert retrieved == created

    listed = client.responses.input_items.list(created["id"])
    page: Any = listed.to_dict()  # OpenAI's list shape, first_id and last_id included
    items = page["data"]
    assert [item["content"] for item in items] == [  # newest first
        [{"type": "input_text", "text": "Briefly."}],
        [{"type": "input_text", "text": "Weather in Paris?"}],
    ]
    assert all(item["id"].startswith("msg_") and item["role"] == "user" for item in items)
    assert page["object"] == "list"
    assert page["first_id"] == items[0]["id"]
    assert page["last_id"] == items[-1]["id"]
    assert page["has_more"] is False
    oldest_first = client.responses.input_items.list(created["id"], order="asc", limit=1)
    assert [item.to_dict()["id"] for item in oldest_first.data] == [items[-1]["id"]]
    assert oldest_first.has_more is True

    client.responses.delete(created["id"])
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created["id"])
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt", input="again", previous_response_id=created["id"])
    assert caught.value.body["code"] == "previous_response_not_found"  # type: ignore[index]
