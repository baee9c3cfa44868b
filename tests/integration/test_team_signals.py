"""What an operator reads, in-process: the Prometheus families of CONTRACT.md read back with
prometheus_client's own parser, the one log line per request (its fields, and no key or
message content), and the trace spans (the SDK's in-memory exporter)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families

from app.ops.logs import JsonFormatter
from app.ops.tracing import Tracing
from tests.helpers.mock_upstream import MockUpstream, Reply, openai_frames
from tests.helpers.request_log import ERROR_FIELDS, LOG_FIELDS
from tests.helpers.upstream_answers import USAGE, openai_text_chunks, openai_tool_completion
from tests.integration.conftest import PROVIDER_KEY, SECRETS, chat, make_config, serve
from tests.integration.test_team_keys_limits import (
    ALICE_KEY,
    BOB_KEY,
    team_config,
    with_limits,
)

pytestmark = pytest.mark.anyio

FAMILIES = {
    "toolrelay_requests": "counter",
    "toolrelay_request_duration_seconds": "histogram",
    "toolrelay_time_to_first_token_seconds": "histogram",
    "toolrelay_overhead_seconds": "histogram",
    "toolrelay_tokens": "counter",
    "toolrelay_upstream_errors": "counter",
    "toolrelay_retries": "counter",
    "toolrelay_fallbacks": "counter",
    "toolrelay_rate_limited": "counter",
    "toolrelay_streams_in_flight": "gauge",
    "toolrelay_store_errors": "counter",
}
SECRET_WORDS = "the-user-message-SECRET-CONTENT"


def samples(metrics_text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample by (name, labels)."""
    found = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


async def test_every_family_is_declared_at_start_up_with_known_series_at_zero(
    mock_upstream: MockUpstream,
) -> None:
    raw = with_limits(team_config(mock_upstream), "alice", rpm=5)
    async with serve(make_config(raw), client_key=None) as client:
        metrics_text = (await client.get("/metrics")).text
    families = {family.name: family.type for family in text_string_to_metric_families(metrics_text)}
    assert FAMILIES.items() <= families.items()
    found = samples(metrics_text)
    labels = {"model": "mini", "provider": "oa", "key": "alice"}
    assert value(found, "toolrelay_tokens_total", **labels, type="prompt") == 0
    assert value(found, "toolrelay_retries_total", model="big", provider="oa") == 0
    assert value(found, "toolrelay_rate_limited_total", model="demo", key="alice", limit="rpm") == 0


async def test_requests_tokens_latency_and_streams_are_counted(mock_upstream: MockUpstream) -> None:
    usage_chunk = {**openai_text_chunks("x")[0], "choices": [], "usage": USAGE}
    mock_upstream.add(Reply(json=openai_tool_completion()))
    mock_upstream.add(Reply(frames=openai_frames([*openai_text_chunks("Hi"), usage_chunk])))
    raw = with_limits(team_config(mock_upstream), "alice", rpm=2)
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        await client.post("/v1/chat/completions", json=chat("mini"))
        await client.post("/v1/chat/completions", json=chat("mini", stream=True))
        await client.post("/v1/chat/completions", json=chat("mini"))  # over alice's rpm
        found = samples((await client.get("/metrics")).text)
    labels = {"model": "mini", "provider": "oa"}
    assert value(found, "toolrelay_requests_total", **labels, key="alice", status="200") == 2
    refused = {"model": "mini", "provider": "none", "key": "alice", "status": "429"}
    assert value(found, "toolrelay_requests_total", **refused) == 1
    assert value(found, "toolrelay_rate_limited_total", model="mini", key="alice", limit="rpm") == 1
    for token_type, each in (("prompt", "prompt_tokens"), ("completion", "completion_tokens")):
        tokens = value(found, "toolrelay_tokens_total", **labels, key="alice", type=token_type)
        assert tokens == 2 * USAGE[each]
    assert value(found, "toolrelay_request_duration_seconds_count", **labels) == 2
    assert value(found, "toolrelay_overhead_seconds_count", **labels) == 2
    assert value(found, "toolrelay_time_to_first_token_seconds_count", **labels) == 1
    assert value(found, "toolrelay_streams_in_flight", **labels) == 0


async def test_upstream_errors_retries_and_fallbacks_are_counted(
    mock_upstream: MockUpstream,
) -> None:
    failure = Reply(503, json={"error": {"message": "overloaded", "type": "server_error"}})
    for _ in range(2):
        mock_upstream.add(failure)
    mock_upstream.add(Reply(json=openai_tool_completion()))
    raw = team_config(mock_upstream)
    raw["router"] = {"retries": 1, "backoff": 0}
    async with serve(make_config(raw), client_key=BOB_KEY) as client:
        answered = await client.post("/v1/chat/completions", json=chat("mini"))
        found = samples((await client.get("/metrics")).text)
    assert answered.status_code == 200
    assert answered.headers["x-toolrelay-model"] == "big"
    errors = {"model": "mini", "provider": "oa", "status": "502"}
    assert value(found, "toolrelay_upstream_errors_total", **errors) == 2
    assert value(found, "toolrelay_retries_total", model="mini", provider="oa") == 1
    assert value(found, "toolrelay_fallbacks_total", model="mini", fallback="big") == 1
    answered_by = {"model": "big", "provider": "oa", "key": "bob", "status": "200"}
    assert value(found, "toolrelay_requests_total", **answered_by) == 1


async def test_one_log_line_per_request_with_its_fields_and_nothing_secret(
    mock_upstream: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    mock_upstream.add(Reply(json=openai_tool_completion()))
    body = chat("mini")
    body["messages"] = [{"role": "user", "content": SECRET_WORDS}]
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        caplog.clear()
        response = await client.post("/v1/chat/completions", json=body)
    (record,) = [r for r in caplog.records if r.name == "toolrelay.http"]
    line = json.loads(JsonFormatter().format(record))
    assert set(line) >= LOG_FIELDS
    assert line["request_id"] == response.headers["x-request-id"]
    assert (line["key"], line["model"], line["provider"], line["status"]) == (
        "alice",
        "mini",
        "oa",
        200,
    )
    assert (line["prompt_tokens"], line["completion_tokens"]) == (82, 41)
    assert line["attempts"] == 1
    assert line["deployment"].startswith("mini#0:oa/")
    assert (line["level"], line["message"]) == ("info", "request")
    text = json.dumps(line) + str(record.getMessage())
    for secret in (*SECRETS, ALICE_KEY, SECRET_WORDS, PROVIDER_KEY):
        assert secret not in text


def test_the_json_formatter_keeps_ordinary_records_one_line() -> None:
    record = logging.LogRecord("toolrelay.store", logging.WARNING, "x", 1, "down\nhard", (), None)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert json.loads(line)["message"] == "down\nhard"


async def test_a_request_and_each_attempt_are_traced_without_content(
    mock_upstream: MockUpstream,
) -> None:
    failure = Reply(500, json={"error": {"message": "boom", "type": "server_error"}})
    mock_upstream.add(failure)
    mock_upstream.add(Reply(json=openai_tool_completion()))
    exporter = InMemorySpanExporter()
    raw = team_config(mock_upstream)
    raw["router"] = {"retries": 1, "backoff": 0}
    body = chat("mini")
    body["messages"] = [{"role": "user", "content": SECRET_WORDS}]
    async with serve(
        make_config(raw), client_key=ALICE_KEY, tracing=Tracing(None, exporter=exporter)
    ) as client:
        traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        await client.post("/v1/chat/completions", json=body, headers={"traceparent": traceparent})
    spans = exporter.get_finished_spans()
    (server,) = [span for span in spans if span.kind == SpanKind.SERVER]
    attempts = [span for span in spans if span.kind == SpanKind.CLIENT]
    assert len(attempts) == 2
    assert server.context.trace_id == int("0af7651916cd43dd8448eb211c80319c", 16)
    assert server.attributes["toolrelay.key"] == "alice"
    assert server.attributes["gen_ai.usage.input_tokens"] == 82
    for attempt in attempts:
        assert attempt.parent.span_id == server.context.span_id
        assert attempt.attributes["gen_ai.system"] == "openai"
        assert attempt.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert [a.attributes.get("http.response.status_code") for a in attempts] == [502, 200]
    assert attempts[1].attributes["gen_ai.usage.output_tokens"] == 41
    every_value = json.dumps([dict(span.attributes) for span in spans], default=str)
    for secret in (ALICE_KEY, SECRET_WORDS, PROVIDER_KEY):
        assert secret not in every_value


async def test_a_refused_request_logs_its_error_code_and_param_never_its_message(
    mock_upstream: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 20 part 4: a 400, 404 or 429 is diagnosable from its log line (text and JSON),
    while the error's message, which may quote the user's words, stays out of it."""
    echoed = {"message": f"bad: {SECRET_WORDS}", "type": "invalid_request_error"}
    mock_upstream.add(Reply(400, json={"error": {**echoed, "param": "tools[0]", "code": None}}))
    raw = with_limits(team_config(mock_upstream), "alice", rpm=1)
    user = [{"role": "user", "content": SECRET_WORDS}]
    requests = [
        ({"model": "mini", "messages": user, "temperature": SECRET_WORDS}, 400),
        ({"model": "mini", "messages": user}, 400),  # the upstream's, echoing the content
        ({"model": f"no-such-{SECRET_WORDS}", "messages": user}, 404),
        ({"model": "mini", "messages": user}, 429),  # over alice's rpm
    ]
    lines: list[tuple[dict[str, Any], str]] = []
    async with serve(make_config(raw), client_key=ALICE_KEY) as client:
        for body, status in requests:
            caplog.clear()
            response = await client.post("/v1/chat/completions", json=body)
            assert response.status_code == status, response.text
            (record,) = [r for r in caplog.records if r.name == "toolrelay.http"]
            lines.append((json.loads(JsonFormatter().format(record)), record.getMessage()))
    errors = [(line["status"], line["error_code"], line["error_param"]) for line, _ in lines]
    assert errors == [
        (400, None, "temperature"),
        (400, None, "tools[0]"),
        (404, "model_not_found", "model"),
        (429, "rate_limit_exceeded", None),
    ]
    for line, text in lines:
        assert set(line) >= LOG_FIELDS | ERROR_FIELDS
        assert SECRET_WORDS not in json.dumps(line) + text
    assert "error_param=temperature" in lines[0][1]
    assert "error_code=model_not_found error_param=model" in lines[2][1]
    assert "error_code=rate_limit_exceeded" in lines[3][1]
    assert "error_param" not in lines[3][1]  # text leaves out what is None


async def test_an_answered_request_logs_no_error_fields(
    mock_upstream: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    mock_upstream.add(Reply(json=openai_tool_completion()))
    async with serve(make_config(team_config(mock_upstream)), client_key=ALICE_KEY) as client:
        caplog.clear()
        await client.post("/v1/chat/completions", json=chat("mini"))
    (record,) = [r for r in caplog.records if r.name == "toolrelay.http"]
    line = json.loads(JsonFormatter().format(record))
    assert not set(line) & ERROR_FIELDS
    assert "error_" not in record.getMessage()
