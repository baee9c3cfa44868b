"""Two real proxy processes on one real Redis, as replicas behind a load balancer run: a key's
limit holds across both, each answers with its overhead header, and each writes one JSON line
per request to standard error, with the contract's fields and neither key nor content."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.e2e.conftest import RunningProxy, run_proxy, sdk_client
from tests.helpers.request_log import LOG_FIELDS

ALICE_KEY = "alice-e2e-SECRET-333"
CONTENT = "a-message-the-logs-must-never-hold"


def cluster_config(redis_url: str) -> str:
    return f"""
server:
  keys:
    - {{name: alice, key: {ALICE_KEY}, models: [demo], limits: {{rpm: 4}}}}
  store: {{kind: redis, url: "{redis_url}", on_error: closed}}
  log: {{format: json, level: info}}
providers:
  demo: {{kind: demo}}
models:
  - {{name: demo, provider: demo, model: demo}}
"""


def ask(proxy: RunningProxy) -> httpx.Response:
    """One chat request with the OpenAI SDK; the HTTP response, answered or refused."""
    client = sdk_client(proxy, api_key=ALICE_KEY)
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": CONTENT}]
    try:
        raw = client.chat.completions.with_raw_response.create(model="demo", messages=messages)
    except openai.RateLimitError as refused:
        return refused.response
    raw.parse()
    return raw.http_response


def request_lines(log: Path) -> list[dict[str, object]]:
    """Every line of the log is JSON; the chat requests' lines among them."""
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("path") == "/v1/chat/completions"]


def test_two_replicas_share_a_limit_and_log_json(redis_url: str, tmp_path: Path) -> None:
    with ExitStack() as stack:
        replicas = []
        for name in ("one", "two"):
            directory = tmp_path / name
            directory.mkdir()
            replicas.append(stack.enter_context(run_proxy(cluster_config(redis_url), directory)))
        answers = [ask(replica) for replica in (*replicas, *replicas, *replicas)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429, 429]
    for answer in answers:
        assert float(answer.headers["x-toolrelay-overhead-ms"]) >= 0
    for refused in answers[4:]:
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    for replica in replicas:
        lines = request_lines(replica.log)
        assert [line["status"] for line in lines] == [200, 200, 429]
        for line in lines:
            assert set(line) >= LOG_FIELDS
            assert (line["key"], line["model"]) == ("alice", "demo")
        text = replica.log.read_text()
        assert ALICE_KEY not in text
        assert CONTENT not in text


def test_two_replicas_share_stored_responses(redis_url: str, tmp_path: Path) -> None:
    """A Responses tool loop whose turns land on different replicas: the second chains to a
    response the other one stored, and either can retrieve and delete it."""
    config = cluster_config(redis_url).replace("limits: {rpm: 4}", "limits: {rpm: 100}")
    tools: Any = [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    with ExitStack() as stack:
        one, two = (
            stack.enter_context(run_proxy(config, _directory(tmp_path, name)))
            for name in ("one", "two")
        )
        first = sdk_client(one, api_key=ALICE_KEY).responses.create(
            model="demo", input="Weather in Paris?", tools=tools
        )
        call = first.output[-1]
        assert call.type == "function_call"
        result: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
        other = sdk_client(two, api_key=ALICE_KEY)
        second = other.responses.create(
            model="demo", previous_response_id=first.id, input=result, tools=tools
        )
        assert "sunny" in second.output_text
        assert other.responses.retrieve(first.id).id == first.id
        sdk_client(one, api_key=ALICE_KEY).responses.delete(second.id)
        with pytest.raises(openai.NotFoundError):
            other.responses.retrieve(second.id)


def _directory(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    return directory
