"""Any POST /v1/chat/completions, /v1/responses or /v1/messages body, however malformed, through
the in-process app to the three cloud kinds (issue 30): Claude on Bedrock, Gemini and Claude on
Vertex AI, GPT on Azure, each a double on 127.0.0.1 that screens what it gets as its provider
does (tests/helpers/cloud_fuzz_doubles.py). The answer is never a 5xx; every error is the API's
own shape (OpenAI's, Anthropic's on /v1/messages); a stream that began ends as its API ends
one; and a body we accept reaches the provider in a form it takes: a double's 400 is our
defect, not the client's (except for a Messages body Anthropic itself would refuse, which goes
to Claude on Vertex as it came)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from app.config import Config
from tests.helpers import anthropic_rules
from tests.helpers.anthropic_stream import assert_anthropic_stream, parse_anthropic_sse
from tests.helpers.cloud_fuzz_bodies import BODIES, aimed
from tests.helpers.cloud_fuzz_doubles import AZURE_KEY, MODELS, FuzzDoubles, fuzz_doubles
from tests.helpers.mock_bedrock import API_KEY as BEDROCK_KEY
from tests.integration import test_responses_fuzz as responses_fuzz
from tests.integration.conftest import make_config, raw_config, serve

EXAMPLES = 100
KINDS = list(MODELS)
CLOUD_SECRETS = (BEDROCK_KEY, AZURE_KEY, "ya29.")

# -- what comes back -----------------------------------------------------------------------


def check_chat(answer: httpx.Response) -> None:
    if answer.status_code != 200:
        responses_fuzz.check_error(answer)
        return
    if not answer.headers["content-type"].startswith("text/event-stream"):
        assert answer.json()["object"] == "chat.completion"
        return
    payloads = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]", payloads[-1]
    chunks = [json.loads(payload) for payload in payloads[:-1]]
    assert all("error" not in chunk for chunk in chunks), chunks
    finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"]]
    assert [finish for finish in finishes if finish], chunks


def check_messages(answer: httpx.Response) -> None:
    assert answer.status_code < 500, answer.text
    if answer.status_code != 200:
        body = answer.json()
        assert set(body) == {"type", "error"}, body
        assert body["type"] == "error"
        assert isinstance(body["error"]["type"], str), body
        assert isinstance(body["error"]["message"], str)
        assert body["error"]["message"], body
        return
    if answer.headers["content-type"].startswith("text/event-stream"):
        assert_anthropic_stream(parse_anthropic_sse(answer.content))
    else:
        assert answer.json()["type"] == "message"


def anthropic_would_refuse(body: Any) -> bool:
    """Whether Anthropic itself refuses this Messages body's history (so may the provider)."""
    try:
        return bool(anthropic_rules.request_problems(body))
    except (AttributeError, TypeError, KeyError):  # not even a list of messages
        return True


def check_reached_provider(doubles: FuzzDoubles, seen: int, api: str, body: Any) -> None:
    """A body we accepted went upstream in a form the provider takes."""
    refusals = doubles.refusals[seen:]
    if refusals and api == "messages" and anthropic_would_refuse(body):
        return
    assert not refusals, "\n".join(f"{r.path}: {r.message}\nsent {r.body}" for r in refusals)


# -- the runs ------------------------------------------------------------------------------

PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
CHECKS = {
    "chat": check_chat,
    "responses": lambda answer: None,  # checked with the body: responses_fuzz.check_answer
    "messages": check_messages,
}


@pytest.fixture(scope="module")
def doubles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzDoubles]:
    with fuzz_doubles(Path(tmp_path_factory.mktemp("cloud-fuzz"))) as running:
        yield running


def proxy_config(doubles: FuzzDoubles) -> Config:
    raw = raw_config()
    raw["providers"] = doubles.providers
    raw["models"] = doubles.models
    return make_config(raw)


def post(client: httpx.AsyncClient, api: str, body: Any) -> Any:
    encoded = json.dumps(body)
    if api == "responses":
        encoded = responses_fuzz.with_known_ids(encoded)
    return client.post(
        PATHS[api], content=encoded.encode(), headers={"content-type": "application/json"}
    )


def check(answer: httpx.Response, api: str, body: Any) -> None:
    for secret in CLOUD_SECRETS:
        assert secret not in answer.text, answer.text
    if api == "responses":
        responses_fuzz.check_answer(answer, body)
    else:
        CHECKS[api](answer)


@contextmanager
def served(runner: asyncio.Runner, config: Config) -> Iterator[httpx.AsyncClient]:
    """serve(config) held open by one task of the runner's loop (a lifespan is entered and left
    in one task), its client used by each `runner.run(...)` meanwhile."""

    async def hold(ready: asyncio.Future[httpx.AsyncClient], stop: asyncio.Event) -> None:
        async with serve(config) as client:
            ready.set_result(client)
            await stop.wait()

    async def start() -> tuple[httpx.AsyncClient, asyncio.Event, asyncio.Task[None]]:
        ready: asyncio.Future[httpx.AsyncClient] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.create_task(hold(ready, stop))
        either: list[asyncio.Future[Any]] = [ready, task]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            await task  # it failed to start: its exception
        return ready.result(), stop, task

    client, stop, task = runner.run(start())
    try:
        yield client
    finally:
        stop.set()
        runner.run(asyncio.wait_for(task, None))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("api", list(PATHS))
def test_no_body_is_a_5xx_or_refused_by_the_provider(
    doubles: FuzzDoubles, api: str, kind: str
) -> None:
    statuses: list[int] = []
    responses_fuzz.KNOWN_IDS.clear()
    with asyncio.Runner() as runner, served(runner, proxy_config(doubles)) as client:

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        @given(body=BODIES[api].map(lambda drawn: aimed(drawn, MODELS[kind])))
        def send(body: Any) -> None:
            seen = len(doubles.refusals)
            answer = runner.run(post(client, api, body))
            statuses.append(answer.status_code)
            check(answer, api, body)
            check_reached_provider(doubles, seen, api, body)

        send()
    # Mostly well-formed bodies: some must have been answered, not all refused.
    assert statuses.count(200) >= len(statuses) // 25, statuses


# -- what the fuzz found (issue 30), each pinned down --------------------------------------

WEATHER_CALL = {
    "id": "call_0",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
ASKED = {"role": "user", "content": "Weather in Paris?"}
CALLED = {"role": "assistant", "content": None, "tool_calls": [WEATHER_CALL]}
ANSWERED = {"role": "tool", "tool_call_id": "call_0", "content": "18C"}
TRANSLATED = ["bedrock", "vertex-gemini", "vertex-claude"]


async def refusals_of(
    doubles: FuzzDoubles, bodies: list[tuple[str, dict[str, Any]]]
) -> tuple[list[int], list[str]]:
    """The statuses of the bodies sent in turn (a Responses body's `previous_response_id`
    "PREVIOUS" naming the answer before it), and the providers' refusals of them."""
    seen, statuses, previous = len(doubles.refusals), [], ""
    async with serve(proxy_config(doubles)) as client:
        for api, drawn in bodies:
            body = drawn
            if drawn.get("previous_response_id") == "PREVIOUS":
                body = {**drawn, "previous_response_id": previous}
            answer = await client.post(PATHS[api], json=body)
            statuses.append(answer.status_code)
            previous = answer.json().get("id", "") if answer.status_code == 200 else ""
    return statuses, [refusal.message for refusal in doubles.refusals[seen:]]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", TRANSLATED)
async def test_a_tool_history_without_tools_reaches_the_model(
    doubles: FuzzDoubles, kind: str
) -> None:
    body = {"model": MODELS[kind], "messages": [ASKED, CALLED, ANSWERED]}
    statuses, refusals = await refusals_of(doubles, [("chat", body)])
    assert refusals == []
    assert statuses == [200]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", TRANSLATED)
@pytest.mark.parametrize("after", [[], [{"role": "user", "content": "Never mind."}]])
async def test_unanswered_chat_calls_are_refused_by_us(
    doubles: FuzzDoubles, kind: str, after: list[dict[str, Any]]
) -> None:
    body = {"model": MODELS[kind], "messages": [ASKED, CALLED, *after]}
    statuses, refusals = await refusals_of(doubles, [("chat", body)])
    assert refusals == []
    assert statuses == [400]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", TRANSLATED)
async def test_a_continuation_without_the_calls_outputs_is_refused_by_us(
    doubles: FuzzDoubles, kind: str
) -> None:
    first = {"model": MODELS[kind], "input": "Weather in Paris?"}
    then = {"model": MODELS[kind], "input": "And now?", "previous_response_id": "PREVIOUS"}
    statuses, refusals = await refusals_of(doubles, [("responses", first), ("responses", then)])
    assert statuses[0] == 200  # the doubles always answer with two tool calls
    assert refusals == []
    assert statuses[1] == 400


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_an_item_type_that_is_not_a_string_is_a_400(doubles: FuzzDoubles, kind: str) -> None:
    async with serve(proxy_config(doubles)) as client:
        answer = await client.post(
            "/v1/responses", json={"model": MODELS[kind], "input": [{"type": []}]}
        )
    responses_fuzz.check_error(answer)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "input.0"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", TRANSLATED)
async def test_a_result_for_no_call_is_refused_by_us(doubles: FuzzDoubles, kind: str) -> None:
    orphan = {"role": "tool", "tool_call_id": "call_x", "content": "18C"}
    body = {"model": MODELS[kind], "messages": [ASKED, orphan]}
    statuses, refusals = await refusals_of(doubles, [("chat", body)])
    assert refusals == []
    assert statuses == [400]
