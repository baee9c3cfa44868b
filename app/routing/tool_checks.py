"""The tool-call policy's part in an attempt: what wraps a stream's translator (the thinking
capture, the tool-call audit), a non-stream answer's calls checked, and every audit counted
(the tool-call metrics, and the deployment's valid rate that routing reads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import InvalidToolCall
from app.reasoning.replay import ThinkingKeeper
from app.request_record import RequestRecord
from app.routing.router import Deployment
from app.state import ProxyState
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.completion import audit_completion
from app.toolcalls.plan import ToolPlan
from app.toolcalls.stream import AuditedStream
from app.translators.base import ResponseContext, StreamTranslator


def audit_recorder(
    proxy: ProxyState,
    ctx: ResponseContext,
    deployment: Deployment,
    plan: ToolPlan,
    request: RequestRecord,
) -> Callable[[ToolCallAudit], None]:
    """What every audit of the attempt feeds: the tool-call counters, the deployment's
    rolling valid rate (made only for requests that offered tools) and the request's record
    (the last audit is the answer the client got: its row's tool calls)."""
    count, track = proxy.tool_metrics.record, proxy.quality.record
    model, provider, key = ctx.model, deployment.target.provider_name, deployment.key

    def record(audit: ToolCallAudit) -> None:
        count(model, provider, audit)
        track(model, key, plan, audit)
        request.audit = audit

    return record


def stream_wrapper(
    proxy: ProxyState,
    plan: ToolPlan | None,
    record_audit: Callable[[ToolCallAudit], None] | None,
    keeper: ThinkingKeeper | None,
) -> Callable[[StreamTranslator], StreamTranslator] | None:
    """What wraps the kind's stream translator: the thinking capture sees the upstream's
    calls as they came, the tool-call audit (outermost) what the client gets."""
    if plan is None and keeper is None:
        return None

    def wrap(stream: StreamTranslator) -> StreamTranslator:
        if keeper is not None:
            stream = keeper.capture(stream)
        if plan is not None:
            stream = AuditedStream(
                stream, plan=plan, validators=proxy.validators, on_audit=record_audit
            )
        return stream

    return wrap


def check_calls(
    completion: dict[str, Any],
    plan: ToolPlan,
    proxy: ProxyState,
    ctx: ResponseContext,
    record_audit: Callable[[ToolCallAudit], None],
) -> ToolCallAudit:
    """A non-stream answer's calls recovered and classified, counted, and named in
    `x-toolrelay-tool-calls`; refused when the policy holds calls and one is invalid."""
    audit = audit_completion(completion, plan, proxy.validators)
    record_audit(audit)
    if audit.calls:
        ctx.headers["x-toolrelay-tool-calls"] = audit.header()
    if plan.holds_calls and audit.invalid:
        raise InvalidToolCall(audit.problems())
    return audit
