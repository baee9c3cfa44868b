"""One upstream call of a chat request, within its deployment's timeouts: the request
translated for the deployment's kind, the answer (a whole completion, or a stream committed
once its first chunk exists) translated back, its tool calls audited and counted. What to do
when it fails is dispatch's business (app/routing/dispatch.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.credentials.providers import credential_setting
from app.errors import (
    ProxyError,
    UpstreamAuthFailed,
    UpstreamStatusError,
    UpstreamTimeout,
)
from app.openai_types import ChatRequest
from app.ops.tracing import AttemptSpan
from app.ops.usage import token_counts
from app.reasoning.replay import ThinkingKeeper, wants_thinking
from app.reasoning.store import ScopedThinkingStore
from app.relay.streaming import StreamOptions, StreamOutcome, complete, open_stream
from app.request_record import RequestRecord
from app.routing.face import Face
from app.routing.router import Deployment, Route
from app.routing.tool_checks import audit_recorder, check_calls, stream_wrapper
from app.spend.cost import price_answer, priced_stream
from app.state import ProxyState
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.plan import ToolPlan
from app.translators.base import (
    ResponseContext,
    Target,
    Translator,
    UpstreamRequest,
)


@dataclass(slots=True)
class Answer:
    """What the client gets: a whole completion, or SSE frames to relay (already committed to
    a 200: the first frame exists). `model_name` is the configured model that answered;
    `headers` are those translation added (ResponseContext.headers)."""

    model_name: str
    completion: dict[str, Any] | None = None
    frames: AsyncGenerator[bytes, None] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    audit: ToolCallAudit | None = None
    """A non-stream answer's tool calls, each with its source and verdict (when tools were
    offered); `eval` reads it."""


@dataclass(frozen=True, slots=True)
class Job:
    """What every attempt of one request shares: its log record, the client's API, the
    deadline on the event loop's clock, and its conversation's key (app/routing/affinity.py;
    None when it has none)."""

    record: RequestRecord
    face: Face
    deadline: float
    conversation: int | None = None


@dataclass(slots=True)
class _Attempt:
    """One upstream call being made: where it goes, how it is translated and checked."""

    deployment: Deployment
    translator: Translator
    upstream_request: UpstreamRequest
    ctx: ResponseContext
    plan: ToolPlan | None
    keeper: ThinkingKeeper | None
    native: bool
    span: AttemptSpan | None = None

    def ended(self, status: int, usage: Any = None, error: ProxyError | None = None) -> None:
        """Ends the attempt's trace span, if the request is traced."""
        if self.span is not None:
            tokens = token_counts(usage)
            self.span.end(
                status=status,
                input_tokens=None if tokens is None else tokens[0],
                output_tokens=None if tokens is None else tokens[1],
                error_type=None if error is None else error.code or error.type,
            )


async def try_deployment(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    deployment: Deployment,
    job: Job,
    plan: ToolPlan | None = None,
) -> Answer:
    """One upstream call, within the deployment's timeouts. Counts as in flight (for
    least-busy) until its answer is complete: for a stream, until the relay ends. A kind that
    speaks the client's API natively gets the request as it came, and its answer goes back
    as it was (no tool-call policy or thinking store: nothing was translated)."""
    target = deployment.target
    translator = proxy.translator(target)
    keeper: ThinkingKeeper | None = None
    native = job.face.native(translator, target)
    if native is not None:
        translator, plan = native, None
    else:
        chat_request = job.face.prepare(chat_request, target)
        if translator.replays_thinking and wants_thinking(chat_request):
            store = ScopedThinkingStore(proxy.ops.thinking, job.record.key.name)
            keeper = ThinkingKeeper(store, proxy.redact)
            chat_request = await keeper.restore(chat_request)
    upstream_request = translator.build_request(chat_request, target)
    ctx = ResponseContext(
        completion_id=proxy.new_id(),
        created=int(proxy.clock()),
        model=route.model_name,
        request=chat_request,
        target=target,
    )
    if upstream_request.warning is not None:
        ctx.headers["x-toolrelay-warning"] = upstream_request.warning
    attempt = _Attempt(
        deployment, translator, upstream_request, ctx, plan, keeper, native is not None
    )
    job.record.provider = target.provider_name
    if job.record.span is not None:
        attempt.span = job.record.span.attempt(
            model=route.model_name,
            provider=target.provider_name,
            kind=target.provider.kind,
            upstream_model=target.upstream_model,
            server_address=target.provider.base_url,
            stream=upstream_request.stream,
        )
    proxy.balancer.started(deployment.key)
    handed_over = False
    try:
        if upstream_request.stream:
            answered = await _attempt_stream(proxy, attempt, job)
            handed_over = True
            return answered
        return await _attempt_answer(proxy, attempt, job)
    except ProxyError as failure:
        refused = _credentials_refused(failure, target)
        attempt.ended(refused.status, error=refused)
        if refused is failure:
            raise
        raise refused from failure
    finally:
        if not handed_over:
            proxy.balancer.ended(deployment.key)


async def _attempt_stream(proxy: ProxyState, attempt: _Attempt, job: Job) -> Answer:
    """Opens the stream; from its first chunk the relay owns it, and tells the balancer and
    the record when it ends."""
    key, target, ctx = attempt.deployment.key, attempt.deployment.target, attempt.ctx
    limits = proxy.upstreams.limits(key, attempt.deployment.timeouts)
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = job.record.clock()

    price = proxy.spend_prices.for_target(target)

    def stream_ended(outcome: StreamOutcome) -> None:
        proxy.balancer.ended(key)
        in_flight.dec()
        job.record.stream_ended(key, outcome.error, outcome.usage)
        if price is not None:
            job.record.add_cost(price.cost(outcome.usage))
        error = outcome.error
        attempt.ended(200 if error is None else error.status, outcome.usage, error)
        if error is not None:
            errors = proxy.ops.metrics.upstream_errors
            errors.labels(ctx.model, target.provider_name, str(error.status)).inc()

    keeper = attempt.keeper
    options = StreamOptions(
        target.provider_name,
        proxy.redact,
        limits.stream,
        deadline=started + limits.total,
        on_end=stream_ended,
        before_done=_before_done(keeper, None if attempt.native else job.face.stream_done()),
        encoder=job.face.encoder(ctx, native=attempt.native),
    )
    plan = attempt.plan
    record = (
        None if plan is None else audit_recorder(proxy, ctx, attempt.deployment, plan, job.record)
    )
    wrap = stream_wrapper(proxy, plan, record, keeper)
    if price is not None:
        wrap = priced_stream(price, wrap)
    client = proxy.upstreams.client(target.provider_name)
    in_flight = proxy.ops.metrics.in_flight(ctx.model, target.provider_name)
    try:
        async with asyncio.timeout(limits.first_token):
            frames = await open_stream(
                client, attempt.upstream_request, attempt.translator, ctx, options, wrap
            )
    except TimeoutError:
        raise _timeout(target.provider_name, "its first token", limits.first_token) from None
    finally:
        job.record.waited_since(waiting)
    in_flight.inc()
    job.record.first_token_ms = (job.record.clock() - waiting) * 1000
    return Answer(ctx.model, frames=frames, headers=ctx.headers)


def _before_done(
    keeper: ThinkingKeeper | None, face_done: Callable[[], Awaitable[None]] | None
) -> Callable[[], Awaitable[None]] | None:
    """What a stream awaits before its last frames: the thinking store's save and the face's
    own, either, both or neither."""
    if keeper is None or face_done is None:
        return face_done if keeper is None else keeper.save_stream

    async def both() -> None:
        await keeper.save_stream()
        await face_done()

    return both


async def _attempt_answer(proxy: ProxyState, attempt: _Attempt, job: Job) -> Answer:
    """A non-stream call: the whole answer, its calls checked, in the client's shape."""
    key, target, ctx = attempt.deployment.key, attempt.deployment.target, attempt.ctx
    limits = proxy.upstreams.limits(key, attempt.deployment.timeouts)
    client = proxy.upstreams.client(target.provider_name)
    waiting = job.record.clock()
    try:
        async with asyncio.timeout(limits.total):
            completion = await complete(
                client, attempt.upstream_request, attempt.translator, ctx, limits.answer
            )
    except TimeoutError:
        raise _timeout(target.provider_name, "its answer", limits.total) from None
    finally:
        job.record.waited_since(waiting)
    job.record.answered(key, completion.get("usage"))
    price = proxy.spend_prices.for_target(target)
    if price is not None:
        job.record.add_cost(price_answer(price, completion, ctx.headers))
    if attempt.keeper is not None:
        await attempt.keeper.save_completion(completion)
    audit = None
    if attempt.plan is not None:
        recorder = audit_recorder(proxy, ctx, attempt.deployment, attempt.plan, job.record)
        audit = check_calls(completion, attempt.plan, proxy, ctx, recorder)
    attempt.ended(200, completion.get("usage"))
    if not attempt.native:
        completion = job.face.completion(completion, ctx)
    return Answer(ctx.model, completion=completion, headers=ctx.headers, audit=audit)


def _credentials_refused(failure: ProxyError, target: Target) -> ProxyError:
    """The one place an upstream's refusal of ToolRelay's own credentials is told apart: its
    401 or 403 (whatever the kind's translator made of the body) becomes a 502 naming the
    provider and the setting to fix, so the client never blames its own key. Anything else
    is returned as it was."""
    if not (isinstance(failure, UpstreamStatusError) and failure.upstream_status in (401, 403)):
        return failure
    name = target.provider_name
    return UpstreamAuthFailed(
        f"The upstream provider '{name}' refused ToolRelay's own credentials "
        f"(HTTP {failure.upstream_status}): check {credential_setting(name, target.provider)} "
        f"(the client's key was accepted). It said: {failure.message}",
        headers=failure.headers,
    )


def _timeout(provider_name: str, what: str, seconds: float) -> UpstreamTimeout:
    return UpstreamTimeout(
        f"The upstream provider '{provider_name}' did not send {what} within {seconds:g} s."
    )
