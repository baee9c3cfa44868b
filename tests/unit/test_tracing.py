"""Tracing: off imports nothing; on, a request span with its attempts as children, GenAI
attributes and error statuses, the caller's traceparent honoured, and real OTLP/HTTP export."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from app.ops.tracing import AttemptSpan, RequestSpan, Tracing

ROOT = Path(__file__).parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Iterator[Tracing]:
    tracing = Tracing(None, exporter=exporter, service_name="relay-test")
    yield tracing
    tracing.shutdown()


def started(tracing: Tracing, traceparent: str | None = None) -> RequestSpan:
    span = tracing.request_span(
        method="POST", path="/v1/chat/completions", request_id="req-1", traceparent=traceparent
    )
    assert span is not None
    return span


def plain_attempt(request: RequestSpan, upstream_model: str) -> AttemptSpan:
    return request.attempt(
        model="m",
        provider="p",
        kind="openai",
        upstream_model=upstream_model,
        server_address="h",
        stream=False,
    )


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_disabled_returns_no_span_and_shutdown_is_safe() -> None:
    tracing = Tracing(None)
    assert not tracing.enabled
    assert tracing.request_span(method="GET", path="/health", request_id="r") is None
    tracing.shutdown()


def test_disabled_imports_nothing_from_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from app.ops.tracing import Tracing\n"
        "tracing = Tracing(None)\n"
        "tracing.request_span(method='GET', path='/', request_id='r')\n"
        "tracing.shutdown()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.fixture
def two_attempts(tracing: Tracing, exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    """A request whose first attempt was rate limited and whose second answered."""
    assert tracing.enabled
    request = started(tracing)
    failed = request.attempt(
        model="smart",
        provider="anthropic-main",
        kind="anthropic",
        upstream_model="claude-x",
        server_address="api.anthropic.com",
        stream=True,
    )
    failed.end(status=429, error_type="rate_limit_error")
    answered = request.attempt(
        model="smart",
        provider="gemini-backup",
        kind="gemini",
        upstream_model="gemini-y",
        server_address="https://generativelanguage.googleapis.com/v1beta",
        stream=True,
    )
    answered.end(status=200, input_tokens=12, output_tokens=34)
    request.end(status=200, model="smart", key="team-a", input_tokens=12, output_tokens=34)
    return by_name(exporter)


def test_attempts_are_client_children_of_the_server_span(
    two_attempts: dict[str, ReadableSpan],
) -> None:
    assert set(two_attempts) == {"POST /v1/chat/completions", "chat claude-x", "chat gemini-y"}
    root = two_attempts["POST /v1/chat/completions"]
    assert root.context is not None
    assert root.parent is None
    assert root.kind is SpanKind.SERVER
    assert root.resource.attributes["service.name"] == "relay-test"
    for child in (two_attempts["chat claude-x"], two_attempts["chat gemini-y"]):
        assert child.kind is SpanKind.CLIENT
        assert child.parent is not None
        assert child.parent.span_id == root.context.span_id
        assert child.context is not None
        assert child.context.trace_id == root.context.trace_id


def test_request_span_attributes(two_attempts: dict[str, ReadableSpan]) -> None:
    root = two_attempts["POST /v1/chat/completions"]
    assert dict(root.attributes or {}) == {
        "http.request.method": "POST",
        "url.path": "/v1/chat/completions",
        "toolrelay.request_id": "req-1",
        "http.response.status_code": 200,
        "toolrelay.model": "smart",
        "toolrelay.key": "team-a",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 34,
    }
    assert root.status.status_code is StatusCode.UNSET


def test_attempt_span_attributes(two_attempts: dict[str, ReadableSpan]) -> None:
    first, second = two_attempts["chat claude-x"], two_attempts["chat gemini-y"]
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.system": "anthropic",
        "gen_ai.request.model": "claude-x",
        "server.address": "api.anthropic.com",
        "toolrelay.model": "smart",
        "toolrelay.provider": "anthropic-main",
        "toolrelay.stream": True,
        "http.response.status_code": 429,
        "error.type": "rate_limit_error",
    }
    assert first.status.status_code is StatusCode.ERROR
    assert dict(second.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "gcp.gemini",
        "gen_ai.system": "gcp.gemini",
        "gen_ai.request.model": "gemini-y",
        "server.address": "generativelanguage.googleapis.com",
        "server.port": 443,
        "toolrelay.model": "smart",
        "toolrelay.provider": "gemini-backup",
        "toolrelay.stream": True,
        "http.response.status_code": 200,
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 34,
    }
    assert second.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("openai", "openai"), ("anthropic", "anthropic"), ("gemini", "gcp.gemini"), ("xai", "xai")],
)
def test_gen_ai_provider_by_kind(
    tracing: Tracing, exporter: InMemorySpanExporter, kind: str, expected: str
) -> None:
    request = started(tracing)
    request.attempt(
        model="m",
        provider="p",
        kind=kind,
        upstream_model="u",
        server_address="http://127.0.0.1:9999/v1",
        stream=False,
    ).end(status=200)
    attributes = by_name(exporter)["chat u"].attributes or {}
    assert attributes["gen_ai.provider.name"] == expected
    assert attributes["gen_ai.system"] == expected
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == 9999
    assert attributes["toolrelay.stream"] is False


def test_failures_mark_spans_as_errors(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = started(tracing)
    timeout = plain_attempt(request, "slow")
    timeout.end(status=0, error_type="timeout")
    bad = plain_attempt(request, "bad")
    bad.end(status=503)
    request.end(status=502, model=None, key=None, input_tokens=None, output_tokens=None)

    spans = by_name(exporter)
    slow = spans["chat slow"]
    assert slow.status.status_code is StatusCode.ERROR
    assert (slow.attributes or {})["error.type"] == "timeout"
    assert "http.response.status_code" not in (slow.attributes or {})
    assert "gen_ai.usage.input_tokens" not in (slow.attributes or {})
    assert spans["chat bad"].status.status_code is StatusCode.ERROR
    assert (spans["chat bad"].attributes or {})["error.type"] == "503"
    root = spans["POST /v1/chat/completions"]
    assert root.status.status_code is StatusCode.ERROR
    assert dict(root.attributes or {}) == {
        "http.request.method": "POST",
        "url.path": "/v1/chat/completions",
        "toolrelay.request_id": "req-1",
        "http.response.status_code": 502,
        "error.type": "502",
    }


def test_client_error_is_not_a_server_span_error(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    started(tracing).end(status=404, model=None, key="k", input_tokens=None, output_tokens=None)
    (root,) = exporter.get_finished_spans()
    assert root.status.status_code is StatusCode.UNSET
    assert "error.type" not in (root.attributes or {})


def test_valid_traceparent_parents_the_request_span(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    request = started(tracing, traceparent=f"00-{TRACE_ID}-{PARENT_ID}-01")
    plain_attempt(request, "u").end(status=200)
    request.end(status=200, model="m", key=None, input_tokens=None, output_tokens=None)
    spans = by_name(exporter)
    root = spans["POST /v1/chat/completions"]
    assert root.parent is not None
    assert root.parent.is_remote
    assert root.parent.trace_id == int(TRACE_ID, 16)
    assert root.parent.span_id == int(PARENT_ID, 16)
    assert root.context is not None
    assert root.context.trace_id == int(TRACE_ID, 16)
    assert spans["chat u"].context is not None
    assert spans["chat u"].context.trace_id == int(TRACE_ID, 16)


@pytest.mark.parametrize(
    "traceparent",
    [
        "garbage",
        f"00-{'0' * 32}-{PARENT_ID}-01",  # the all-zero trace id is invalid
        f"00-{TRACE_ID}-{'0' * 16}-01",  # so is the all-zero parent id
        f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01",
        "",
    ],
)
def test_invalid_traceparent_is_ignored(
    tracing: Tracing, exporter: InMemorySpanExporter, traceparent: str
) -> None:
    started(tracing, traceparent=traceparent).end(
        status=200, model=None, key=None, input_tokens=None, output_tokens=None
    )
    (root,) = exporter.get_finished_spans()
    assert root.parent is None
    assert root.context is not None
    assert root.context.trace_id != int(TRACE_ID, 16)


def test_a_second_end_is_a_no_op(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = started(tracing)
    attempt = plain_attempt(request, "u")
    attempt.end(status=200, input_tokens=1)
    attempt.end(status=500, error_type="late")
    request.end(status=200, model="m", key="k", input_tokens=1, output_tokens=2)
    request.end(status=500, model="x", key="y", input_tokens=9, output_tokens=9)

    spans = by_name(exporter)
    assert len(exporter.get_finished_spans()) == 2
    assert spans["chat u"].status.status_code is StatusCode.UNSET
    assert (spans["chat u"].attributes or {})["http.response.status_code"] == 200
    root = spans["POST /v1/chat/completions"]
    assert root.status.status_code is StatusCode.UNSET
    assert (root.attributes or {})["toolrelay.key"] == "k"
    assert (root.attributes or {})["gen_ai.usage.output_tokens"] == 2


class Collector(ThreadingHTTPServer):
    """Records what an OTLP/HTTP exporter posts to /v1/traces."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CollectorHandler)
        self.received: list[tuple[str, str, bytes]] = []


class CollectorHandler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def decoded_spans(collector: Collector) -> dict[str, Span]:
    """The spans of every body posted, by name, each from the `toolrelay` service."""
    spans: dict[str, Span] = {}
    for _, _, body in collector.received:
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        for resource_spans in export.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert service["service.name"] == "toolrelay"
            for scope_spans in resource_spans.scope_spans:
                spans.update({span.name: span for span in scope_spans.spans})
    return spans


def test_exports_over_otlp_http(collector: Collector) -> None:
    port = collector.server_address[1]
    tracing = Tracing(f"http://127.0.0.1:{port}/")
    request = tracing.request_span(method="POST", path="/v1/chat/completions", request_id="r-9")
    assert request is not None
    request.attempt(
        model="smart",
        provider="oai",
        kind="openai",
        upstream_model="gpt-z",
        server_address="https://api.openai.com/v1",
        stream=False,
    ).end(status=200, input_tokens=5, output_tokens=7)
    request.end(status=200, model="smart", key="team-a", input_tokens=5, output_tokens=7)
    tracing.shutdown()

    assert collector.received
    assert {path for path, _, _ in collector.received} == {"/v1/traces"}
    assert {ctype for _, ctype, _ in collector.received} == {"application/x-protobuf"}
    spans = decoded_spans(collector)
    assert set(spans) == {"POST /v1/chat/completions", "chat gpt-z"}
    attempt = spans["chat gpt-z"]
    attributes = {a.key: a.value for a in attempt.attributes}
    assert attributes["gen_ai.operation.name"].string_value == "chat"
    assert attributes["gen_ai.provider.name"].string_value == "openai"
    assert attributes["gen_ai.system"].string_value == "openai"
    assert attributes["gen_ai.request.model"].string_value == "gpt-z"
    assert attributes["server.address"].string_value == "api.openai.com"
    assert attributes["gen_ai.usage.input_tokens"].int_value == 5
    assert attributes["gen_ai.usage.output_tokens"].int_value == 7
    assert attempt.parent_span_id == spans["POST /v1/chat/completions"].span_id
    assert attempt.trace_id == spans["POST /v1/chat/completions"].trace_id
