"""OpenTelemetry spans for each request and upstream attempt, off (nothing imported) unless set."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.util.types import AttributeValue

# The provider kinds' `gen_ai.provider.name` (and the older `gen_ai.system`) well-known values.
_GEN_AI_PROVIDER = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Tracing:
    """Spans for requests and attempts, exported by OTLP/HTTP (or to a given exporter in tests)
    from a TracerProvider of its own, never the global one."""

    def __init__(
        self,
        otlp_endpoint: str | None,
        *,
        exporter: SpanExporter | None = None,
        service_name: str = "toolrelay",
    ) -> None:
        self._provider: TracerProvider | None = None
        self._tracer: Tracer | None = None
        if otlp_endpoint is None and exporter is None:
            return
        # Imported only here, so a proxy without tracing never loads opentelemetry.
        from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
        from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
            BatchSpanProcessor,
            SimpleSpanProcessor,
        )

        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            assert otlp_endpoint is not None
            provider.add_span_processor(BatchSpanProcessor(_otlp_exporter(otlp_endpoint)))
        self._provider = provider
        self._tracer = provider.get_tracer("toolrelay")

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def request_span(
        self, *, method: str, path: str, request_id: str, traceparent: str | None = None
    ) -> RequestSpan | None:
        """A SERVER span for one client request, continuing the caller's trace when its
        `traceparent` header is valid (an invalid one starts a new trace)."""
        if self._tracer is None:
            return None
        from opentelemetry.trace import SpanKind  # noqa: PLC0415
        from opentelemetry.trace.propagation.tracecontext import (  # noqa: PLC0415
            TraceContextTextMapPropagator,
        )

        carrier = {"traceparent": traceparent} if traceparent else {}
        parent = TraceContextTextMapPropagator().extract(carrier)
        span = self._tracer.start_span(
            f"{method} {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": path,
                "toolrelay.request_id": request_id,
            },
        )
        return RequestSpan(self._tracer, span)

    def shutdown(self) -> None:
        """Flush what is queued and stop exporting; safe when disabled or called twice."""
        provider, self._provider, self._tracer = self._provider, None, None
        if provider is not None:
            provider.shutdown()


class RequestSpan:
    """One client request; `attempt()` opens a child span per upstream call."""

    def __init__(self, tracer: Tracer, span: Span) -> None:
        self._tracer = tracer
        self._span = span
        self._ended = False

    def attempt(
        self,
        *,
        model: str,
        provider: str,
        kind: str,
        upstream_model: str,
        server_address: str,
        stream: bool,
    ) -> AttemptSpan:
        """A CLIENT span (GenAI inference conventions) for one call to one deployment."""
        from opentelemetry.trace import SpanKind, set_span_in_context  # noqa: PLC0415

        gen_ai_provider = _GEN_AI_PROVIDER.get(kind, kind)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": gen_ai_provider,
            "gen_ai.system": gen_ai_provider,
            "gen_ai.request.model": upstream_model,
            **_server_attributes(server_address),
            "toolrelay.model": model,
            "toolrelay.provider": provider,
            "toolrelay.stream": stream,
        }
        span = self._tracer.start_span(
            f"chat {upstream_model}",
            context=set_span_in_context(self._span),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        return AttemptSpan(span)

    def end(
        self,
        *,
        status: int,
        model: str | None,
        key: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> None:
        """Record the answer (the key by its name only) and end; a second call does nothing."""
        if self._ended:
            return
        self._ended = True
        attributes: dict[str, AttributeValue] = {"http.response.status_code": status}
        if model is not None:
            attributes["toolrelay.model"] = model
        if key is not None:
            attributes["toolrelay.key"] = key
        attributes.update(_usage(input_tokens, output_tokens))
        self._span.set_attributes(attributes)
        if status >= 500:
            _mark_error(self._span, str(status))
        self._span.end()


class AttemptSpan:
    """One upstream call; ended once with its outcome."""

    def __init__(self, span: Span) -> None:
        self._span = span
        self._ended = False

    def end(
        self,
        *,
        status: int,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        error_type: str | None = None,
    ) -> None:
        """Record the outcome (status 0: no response, so no status code) and end; an error type
        or a status of 400 and up marks the span failed. A second call does nothing."""
        if self._ended:
            return
        self._ended = True
        attributes = _usage(input_tokens, output_tokens)
        if status > 0:
            attributes["http.response.status_code"] = status
        self._span.set_attributes(attributes)
        if error_type is not None or status >= 400:
            _mark_error(self._span, error_type or str(status))
        self._span.end()


def _otlp_exporter(endpoint: str) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
        OTLPSpanExporter,
    )

    return OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")


def _server_attributes(server_address: str) -> dict[str, AttributeValue]:
    """`server.address` (and `server.port` when known) from a host or a base URL."""
    if "://" not in server_address:
        return {"server.address": server_address}
    url = urlsplit(server_address)
    attributes: dict[str, AttributeValue] = {"server.address": url.hostname or server_address}
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
    if port is not None:
        attributes["server.port"] = port
    return attributes


def _usage(input_tokens: int | None, output_tokens: int | None) -> dict[str, AttributeValue]:
    usage: dict[str, AttributeValue] = {}
    if input_tokens is not None:
        usage["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        usage["gen_ai.usage.output_tokens"] = output_tokens
    return usage


def _mark_error(span: Span, error_type: str) -> None:
    from opentelemetry.trace import StatusCode  # noqa: PLC0415

    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR)
