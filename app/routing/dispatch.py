"""One chat request, from a validated ChatRequest to an answer the HTTP layer can send: route,
then attempt deployments (retrying, cooling failed ones down, falling back to other models)
until one answers or the request's attempts and deadline run out.

An attempt is only retried while nothing has reached the client: a stream commits to a 200
once its first chunk exists (app/relay/streaming.py), and a failure after that ends the stream
with an error event instead.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from app.config import RouterConfig
from app.errors import InvalidToolCall, ProxyError, UpstreamTimeout
from app.openai_types import ChatRequest
from app.reasoning.replay import ThinkingKeeper, wants_thinking
from app.relay.streaming import StreamOptions, StreamOutcome, complete, open_stream
from app.request_record import RequestRecord
from app.routing.face import OPENAI_FACE, Face
from app.routing.router import Deployment, Route
from app.state import ProxyState
from app.toolcalls.audit import ToolCallAudit
from app.toolcalls.completion import audit_completion
from app.toolcalls.correction import with_correction
from app.toolcalls.plan import ToolPlan, plan_for
from app.toolcalls.stream import AuditedStream
from app.translators.base import (
    ResponseContext,
    StreamTranslator,
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
class _Job:
    """What every attempt of one request shares: its log record, the client's API, and the
    deadline on the event loop's clock."""

    record: RequestRecord
    face: Face
    deadline: float


async def answer(
    proxy: ProxyState, chat_request: ChatRequest, record: RequestRecord, face: Face = OPENAI_FACE
) -> Answer:
    """Raises ProxyError (with `x-toolrelay-model` set when a model was chosen) when there is
    no answer to send: the first non-retryable failure, or the last failure once every
    attempt of the model and of its fallbacks has failed. `face` is the client's API."""
    route = proxy.router.resolve(chat_request.model)
    record.model = route.model_name
    loop = asyncio.get_running_loop()
    job = _Job(record, face, loop.time() + proxy.config.router.deadline)
    routes = [route]
    error: ProxyError | None = None
    while routes:
        current = routes.pop(0)
        try:
            return await _serve_checked(proxy, chat_request, current, job)
        except ProxyError as failure:
            failure.headers["x-toolrelay-model"] = current.model_name
            if not failure.retryable:
                raise
            error = failure
        if current is route:
            routes = proxy.router.fallback_routes(route)
        if loop.time() >= job.deadline:
            break
    assert error is not None
    raise error


async def _serve_checked(
    proxy: ProxyState, chat_request: ChatRequest, route: Route, job: _Job
) -> Answer:
    """A model's answer under its tool-call policy: with `on_invalid: retry`, an answer whose
    calls break their tools' definitions (InvalidToolCall, raised before anything reached the
    client) is asked for again, the history followed by a note saying what was wrong."""
    plan = plan_for(chat_request, route.tool_calls)
    tries = plan.retries + 1 if plan is not None and plan.on_invalid == "retry" else 1
    request = chat_request
    for retry in range(tries):
        try:
            return await _serve_model(proxy, request, route, job, plan)
        except InvalidToolCall as invalid:
            if retry == tries - 1:
                raise
            request = with_correction(request, invalid.message)
    raise AssertionError("unreachable: the last try returns or raises")


async def _serve_model(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    job: _Job,
    plan: ToolPlan | None = None,
) -> Answer:
    """Up to 1 + `router.retries` attempts on the model's deployments. A retry goes at once to
    another deployment when a healthy one is left; to the same one only after a backoff, or
    after the upstream's retry-after when it gave one. No sleep runs past the deadline."""
    router = proxy.config.router
    loop = asyncio.get_running_loop()
    failed: list[str] = []
    error: ProxyError | None = None
    retry_after: float | None = None
    for attempt in range(router.retries + 1):
        deployment = proxy.balancer.pick(route, time.monotonic(), failed)
        if error is not None and deployment.key == failed[-1]:
            delay = retry_delay(attempt - 1, router, retry_after)
            if loop.time() + delay >= job.deadline:
                break
            await asyncio.sleep(delay)
        try:
            return await _attempt(proxy, chat_request, route, deployment, job, plan)
        except ProxyError as failure:
            job.record.tried(deployment.key, failure.status)
            if not failure.retryable:
                raise
            retry_after = retry_after_seconds(failure.headers)
            proxy.balancer.cooldowns.failed(
                deployment.key,
                time.monotonic(),
                rate_limited=failure.status == 429,
                retry_after=retry_after or 0.0,
            )
            failed.append(deployment.key)
            error = failure
            if loop.time() >= job.deadline:
                break
    assert error is not None
    raise error


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


async def _attempt(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    deployment: Deployment,
    job: _Job,
    plan: ToolPlan | None = None,
) -> Answer:
    """One upstream call, within the deployment's timeouts. Counts as in flight (for
    least-busy) until its answer is complete: for a stream, until the relay ends. A kind that
    speaks the client's API natively gets the request as it came, and its answer goes back
    as it was (no tool-call policy or thinking store: nothing was translated)."""
    target = deployment.target
    translator = proxy.translators[target.provider.kind]
    keeper: ThinkingKeeper | None = None
    native = job.face.native(translator)
    if native is not None:
        translator, plan = native, None
    else:
        chat_request = job.face.prepare(chat_request, target)
        if translator.replays_thinking and wants_thinking(chat_request):
            keeper = ThinkingKeeper(proxy.thinking, proxy.redact)
            chat_request = await keeper.restore(chat_request)
    upstream_request = translator.build_request(chat_request, target)
    ctx = ResponseContext(
        completion_id=proxy.new_id(),
        created=int(proxy.clock()),
        model=route.model_name,
        request=chat_request,
    )
    if upstream_request.warning is not None:
        ctx.headers["x-toolrelay-warning"] = upstream_request.warning
    attempt = _Attempt(
        deployment, translator, upstream_request, ctx, plan, keeper, native is not None
    )
    proxy.balancer.started(deployment.key)
    handed_over = False
    try:
        if upstream_request.stream:
            answered = await _attempt_stream(proxy, attempt, job)
            handed_over = True
            return answered
        return await _attempt_answer(proxy, attempt, job)
    finally:
        if not handed_over:
            proxy.balancer.ended(deployment.key)


async def _attempt_stream(proxy: ProxyState, attempt: _Attempt, job: _Job) -> Answer:
    """Opens the stream; from its first chunk the relay owns it, and tells the balancer and
    the record when it ends."""
    key, target, ctx = attempt.deployment.key, attempt.deployment.target, attempt.ctx
    limits = proxy.upstreams.limits(key, attempt.deployment.timeouts)
    loop = asyncio.get_running_loop()
    started = loop.time()

    def stream_ended(outcome: StreamOutcome) -> None:
        proxy.balancer.ended(key)
        job.record.stream_ended(key, outcome.error, outcome.usage)

    keeper = attempt.keeper
    options = StreamOptions(
        target.provider_name,
        proxy.redact,
        limits.stream,
        deadline=started + limits.total,
        on_end=stream_ended,
        before_done=keeper.save_stream if keeper is not None else None,
        encoder=job.face.encoder(ctx, native=attempt.native),
    )
    wrap = _stream_wrapper(proxy, attempt.plan, _audit_recorder(proxy, ctx, target), keeper)
    client = proxy.upstreams.client(target.provider_name)
    try:
        async with asyncio.timeout(limits.first_token):
            frames = await open_stream(
                client, attempt.upstream_request, attempt.translator, ctx, options, wrap
            )
    except TimeoutError:
        raise _timeout(target.provider_name, "its first token", limits.first_token) from None
    job.record.first_token_ms = (loop.time() - started) * 1000
    return Answer(ctx.model, frames=frames, headers=ctx.headers)


async def _attempt_answer(proxy: ProxyState, attempt: _Attempt, job: _Job) -> Answer:
    """A non-stream call: the whole answer, its calls checked, in the client's shape."""
    key, target, ctx = attempt.deployment.key, attempt.deployment.target, attempt.ctx
    limits = proxy.upstreams.limits(key, attempt.deployment.timeouts)
    client = proxy.upstreams.client(target.provider_name)
    try:
        async with asyncio.timeout(limits.total):
            completion = await complete(
                client,
                attempt.upstream_request,
                attempt.translator,
                ctx,
                target.provider_name,
                limits.answer,
            )
    except TimeoutError:
        raise _timeout(target.provider_name, "its answer", limits.total) from None
    job.record.answered(key, completion.get("usage"))
    if attempt.keeper is not None:
        await attempt.keeper.save_completion(completion)
    audit = None
    if attempt.plan is not None:
        recorder = _audit_recorder(proxy, ctx, target)
        audit = _check_calls(completion, attempt.plan, proxy, ctx, recorder)
    if not attempt.native:
        completion = job.face.completion(completion, ctx)
    return Answer(ctx.model, completion=completion, headers=ctx.headers, audit=audit)


def _audit_recorder(
    proxy: ProxyState, ctx: ResponseContext, target: Target
) -> Callable[[ToolCallAudit], None]:
    return partial(proxy.tool_metrics.record, ctx.model, target.provider_name)


def _stream_wrapper(
    proxy: ProxyState,
    plan: ToolPlan | None,
    record_audit: Callable[[ToolCallAudit], None],
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


def _check_calls(
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


def _timeout(provider_name: str, what: str, seconds: float) -> UpstreamTimeout:
    return UpstreamTimeout(
        f"The upstream provider '{provider_name}' did not send {what} within {seconds:g} s."
    )


def retry_delay(
    retry: int,
    router: RouterConfig,
    retry_after: float | None,
    random_fraction: Callable[[], float] = random.random,
) -> float:
    """The wait before retry number `retry` (0-based) on the same deployment: the upstream's
    retry-after when it gave one, else `backoff` doubled per retry up to `max_backoff`, with
    "equal jitter" (between half and all of it) so clients retrying together spread out."""
    if retry_after is not None:
        return retry_after
    ceiling = min(router.max_backoff, router.backoff * 2.0**retry)
    return ceiling / 2 + random_fraction() * ceiling / 2


def retry_after_seconds(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """`retry-after-ms` (OpenAI's, exact), else `retry-after` in seconds or as an HTTP date;
    None when neither is there or readable."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())
