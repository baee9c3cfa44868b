"""One chat request, from a validated ChatRequest to an answer the HTTP layer can send: route,
then attempt deployments (retrying, cooling failed ones down, falling back to other models)
until one answers or the request's attempts and deadline run out.

An attempt is only retried while nothing has reached the client: a stream commits to a 200
once its first chunk exists (app/relay/streaming.py), and a failure after that ends the stream
with an error event instead.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from app.errors import InvalidToolCall, ProxyError, UpstreamError
from app.openai_types import ChatRequest
from app.ops.logs import FIELDS, FieldsLine
from app.request_record import RequestRecord
from app.routing.affinity import conversation_key
from app.routing.attempt import Answer, Job, try_deployment
from app.routing.backoff import retry_after_seconds, retry_delay
from app.routing.face import OPENAI_FACE, Face
from app.routing.router import Deployment, Route
from app.state import ProxyState
from app.toolcalls.correction import with_correction
from app.toolcalls.plan import ToolPlan, plan_for

__all__ = ["Answer", "answer"]

logger = logging.getLogger("toolrelay.dispatch")


async def answer(
    proxy: ProxyState, chat_request: ChatRequest, record: RequestRecord, face: Face = OPENAI_FACE
) -> Answer:
    """Raises ProxyError (with `x-toolrelay-model` set when a model was chosen) when there is
    no answer to send: the first non-retryable failure, or the last failure once every
    attempt of the model and of its fallbacks has failed. `face` is the client's API."""
    route = proxy.router.resolve(chat_request.model)
    record.model = route.model_name
    record.stream = record.stream or chat_request.stream is True
    record.key.check(route.model_name)
    admission = proxy.ops.admission
    record.lease = await admission.admit(record.lease, record.key, route.model_name)
    if proxy.spend is not None:
        await proxy.spend.reserve(record, chat_request, route, proxy.spend_prices)
    loop = asyncio.get_running_loop()
    job = Job(
        record, face, loop.time() + proxy.config.router.deadline, _conversation(route, chat_request)
    )
    routes = [route]
    chained = route.tool_calls.on_invalid == "fallback"
    later = proxy.router.fallback_routes(route) if chained else None
    error: ProxyError | None = None
    while routes:
        current = routes.pop(0)
        if current is not route and not await _fall_back(
            proxy, route, current, record, chat_request
        ):
            continue
        final = not chained or not (later if current is route else routes)
        try:
            return await _serve_checked(proxy, chat_request, current, job, chained, final)
        except ProxyError as failure:
            failure.headers["x-toolrelay-model"] = current.model_name
            if not (failure.retryable or (chained and isinstance(failure, InvalidToolCall))):
                raise
            error = failure
        if current is route:
            routes = later if later is not None else proxy.router.fallback_routes(route)
        if loop.time() >= job.deadline:
            break
    assert error is not None
    raise error


def _conversation(route: Route, chat_request: ChatRequest) -> int | None:
    """The request's conversation key (app/routing/affinity.py), only where there is a choice
    of deployment: a model with one and no fallbacks is spared computing it."""
    if len(route.deployments) > 1 or route.fallbacks:
        return conversation_key(chat_request)
    return None


async def _fall_back(
    proxy: ProxyState,
    failed: Route,
    fallback: Route,
    record: RequestRecord,
    chat_request: ChatRequest,
) -> bool:
    """Whether the request may go on to `fallback`: its key may use it and the fallback
    model's own limits and budget admit it (a refusal skips it: the client gets the first
    model's error, not one about a model it never asked for)."""
    if not record.key.may_use(fallback.model_name):
        return False
    try:
        record.lease = await proxy.ops.admission.admit(
            record.lease, record.key, fallback.model_name
        )
        if proxy.spend is not None:
            await proxy.spend.reserve(
                record, chat_request, fallback, proxy.spend_prices, first=False
            )
    except ProxyError:
        return False
    record.model = fallback.model_name
    proxy.ops.metrics.fallbacks.labels(failed.model_name, fallback.model_name).inc()
    return True


async def _serve_checked(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    job: Job,
    chained: bool = False,
    final: bool = True,
) -> Answer:
    """A model's answer under its tool-call policy: with `on_invalid: retry`, an answer whose
    calls break their tools' definitions (InvalidToolCall, raised before anything reached the
    client) is asked for again, the history followed by a note saying what was wrong; with
    `fallback` (the asked model's, `chained`, governs its fallbacks too), another deployment
    is asked instead. `final`: no model comes after this one."""
    plan = plan_for(chat_request, route.tool_calls)
    if plan is not None and (chained or plan.on_invalid == "fallback"):
        plan = replace(plan, on_invalid="fallback")
        return await _serve_fallback(proxy, chat_request, route, job, plan, final)
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


async def _serve_fallback(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    job: Job,
    plan: ToolPlan,
    final: bool,
) -> Answer:
    """on_invalid `fallback` on one model: an answer whose calls break their tools is not
    relayed while a deployment not yet asked is left; each is asked (through the balancer,
    so cooled-down ones come last) until one's calls validate. The last candidate of the
    whole chain (`final`, one deployment left) is asked with a passing plan: its answer goes
    out as `pass` would relay it, and so does a stream's once text has reached the client
    (its audit stops refusing then: app/toolcalls/stream.py). Raises InvalidToolCall when the
    next model should be asked."""
    untried = list(route.deployments)
    while True:
        last = final and len(untried) == 1
        narrowed = (
            route
            if len(untried) == len(route.deployments)
            else replace(route, deployments=tuple(untried))
        )
        try:
            return await _serve_model(
                proxy, chat_request, narrowed, job, plan.passing() if last else plan
            )
        except InvalidToolCall as invalid:
            left = [d for d in untried if d.key != invalid.deployment]
            fields = {
                "event": "tool_call_fallback",
                "reason": "invalid_tool_call",
                "model": route.model_name,
                "deployment": invalid.deployment,
                "next": "deployment" if left else "fallbacks",
            }
            logger.info("%s", FieldsLine(fields), extra={FIELDS: fields})
            if not left or len(left) == len(untried):
                raise
            untried = left


async def _serve_model(
    proxy: ProxyState,
    chat_request: ChatRequest,
    route: Route,
    job: Job,
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
        if len(route.deployments) > 1 and proxy.ops.cooldowns is not None:
            await proxy.balancer.cooldowns.share(route, proxy.ops.cooldowns, time.time())
        deployment = proxy.balancer.pick(route, time.time(), failed, job.conversation)
        provider = deployment.target.provider_name
        if attempt:
            proxy.ops.metrics.retries.labels(route.model_name, provider).inc()
        if error is not None and deployment.key == failed[-1]:
            delay = retry_delay(attempt - 1, router, retry_after)
            if loop.time() + delay >= job.deadline:
                break
            slept = job.record.clock()
            await asyncio.sleep(delay)
            job.record.waited_since(slept)
        try:
            return await try_deployment(proxy, chat_request, route, deployment, job, plan)
        except ProxyError as failure:
            _failed(proxy, route, deployment, failure, job)
            if not failure.retryable:
                raise
            retry_after = retry_after_seconds(failure.headers)
            await _cool_down(proxy, deployment.key, failure, retry_after)
            failed.append(deployment.key)
            error = failure
            if loop.time() >= job.deadline:
                break
    assert error is not None
    raise error


def _failed(
    proxy: ProxyState, route: Route, deployment: Deployment, failure: ProxyError, job: Job
) -> None:
    """Notes a failed attempt: in the request's record, the error counter, and on an invalid
    tool call the deployment that made it (on_invalid `fallback` asks another)."""
    job.record.tried(deployment.key, failure.status)
    if isinstance(failure, InvalidToolCall):
        failure.deployment = deployment.key
    if isinstance(failure, UpstreamError):
        provider = deployment.target.provider_name
        proxy.ops.metrics.upstream_errors.labels(
            route.model_name, provider, str(failure.status)
        ).inc()


async def _cool_down(
    proxy: ProxyState, key: str, failure: ProxyError, retry_after: float | None
) -> None:
    """Counts the failure against the deployment; a cooldown it starts is shared with the
    other replicas when a store is."""
    now = time.time()
    until = proxy.balancer.cooldowns.failed(
        key, now, rate_limited=failure.status == 429, retry_after=retry_after or 0.0
    )
    if until is not None and proxy.ops.cooldowns is not None:
        await proxy.ops.cooldowns.publish(key, until, now)
