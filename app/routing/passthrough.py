"""Where a passed-through request (any other `/v1/` path) goes: the openai-kind deployment
serving its `model`, or without one the provider named by `server.passthrough`; the client's
key checked against either, the request admitted by its limits. One attempt, no fallback: the
body streams through as it arrives, so there is nothing to send a second time."""

from __future__ import annotations

import time
from dataclasses import dataclass

from app.config import ProviderConfig, TimeoutsConfig, effective_timeouts
from app.errors import AuthenticationFailed, InvalidRequest, ModelNotAllowed, RouteNotFound
from app.request_record import RequestRecord
from app.routing.router import Route
from app.state import ProxyState

PASSTHROUGH_KINDS = frozenset({"openai"})
"""Kinds whose upstreams serve the rest of OpenAI's API as OpenAI does, so a request can be
relayed to them unchanged (but for its model and key)."""


@dataclass(frozen=True, slots=True)
class PassthroughTarget:
    """The upstream one request is relayed to. `model_name` is the configured model (None for
    a model-less request); `deployment_key` names the attempt in logs and timeout caches."""

    provider_name: str
    provider: ProviderConfig
    deployment_key: str
    timeouts: TimeoutsConfig
    model_name: str | None = None
    upstream_model: str | None = None

    @property
    def limit_name(self) -> str:
        """What admission counts it under: the model, or `PROVIDER/*` (no model's limits)."""
        return self.model_name or f"{self.provider_name}/*"


async def passthrough_target(
    proxy: ProxyState, model: str | None, record: RequestRecord, where: str
) -> PassthroughTarget:
    """The target, admitted (record.lease holds its places). Raises ProxyError: 404 for an
    unknown model or, without a model, when `server.passthrough` is not set (the message says
    so); 403 when the key may not; 400 for a model of another kind; 429 over a limit.
    `where` is `METHOD PATH`, for the messages."""
    if model is not None:
        target = _model_target(proxy, model, record, where)
    else:
        target = _provider_target(proxy, record, where)
    record.provider = target.provider_name
    record.lease = await proxy.ops.admission.admit(record.lease, record.key, target.limit_name)
    return target


def _model_target(
    proxy: ProxyState, model: str, record: RequestRecord, where: str
) -> PassthroughTarget:
    route = proxy.router.resolve(model)
    record.model = route.model_name
    record.key.check(route.model_name)
    deployments = tuple(
        deployment
        for deployment in route.deployments
        if deployment.target.provider.kind in PASSTHROUGH_KINDS
    )
    if not deployments:
        target = route.deployments[0].target
        raise InvalidRequest(
            f"The model '{model}' is served by the {target.provider.kind}-kind provider "
            f"'{target.provider_name}', which has no {where}: only openai-kind providers "
            "serve the endpoints ToolRelay passes through.",
            param="model",
        )
    openai_route = Route(route.model_name, deployments, route.strategy)
    deployment = proxy.balancer.pick(openai_route, time.time())
    return PassthroughTarget(
        provider_name=deployment.target.provider_name,
        provider=deployment.target.provider,
        deployment_key=deployment.key,
        timeouts=deployment.timeouts,
        model_name=route.model_name,
        upstream_model=deployment.target.upstream_model,
    )


def _provider_target(proxy: ProxyState, record: RequestRecord, where: str) -> PassthroughTarget:
    name = proxy.config.server.passthrough
    if name is None:
        raise RouteNotFound(
            f"Nothing serves {where} on this proxy. A request with a `model` (JSON or form "
            "field) goes to the provider serving that model; one without goes to the "
            "openai-kind provider named by `server.passthrough` in config.yaml, which is "
            "not set.",
            404,
        )
    if not record.key.may_use(f"{name}/*"):
        raise ModelNotAllowed(
            f"The key '{record.key.name}' may not make requests without a model: its "
            f"`models` allow-list would need '{name}/*' (the passthrough provider)."
        )
    provider = proxy.config.providers[name]
    if provider.key_missing:
        raise AuthenticationFailed(
            f"The provider '{name}' has no API key: its configured key is empty (is its "
            "environment variable set?).",
            code="upstream_key_missing",
        )
    return PassthroughTarget(
        provider_name=name,
        provider=provider,
        deployment_key=f"passthrough:{name}",
        timeouts=effective_timeouts(provider, None),
    )
