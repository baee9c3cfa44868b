"""Model name -> the route that serves it: an exact configured name (its deployments and
fallbacks) first, then `PROVIDER/UPSTREAM_MODEL`, else 404 model_not_found."""

from __future__ import annotations

from dataclasses import dataclass

from app.config import (
    Config,
    DeploymentConfig,
    Strategy,
    TimeoutsConfig,
    ToolCallsConfig,
    effective_timeouts,
)
from app.errors import AuthenticationFailed, ModelNotFound
from app.translators.base import Target


@dataclass(frozen=True, slots=True)
class Deployment:
    """One way to serve a model: where an attempt goes, how much traffic it takes, how long
    it may take. `key` names it in cooldowns, balancing state and logs."""

    key: str
    target: Target
    weight: int
    timeouts: TimeoutsConfig


DEFAULT_TOOL_CALLS = ToolCallsConfig()


def deployment_key(model: str, index: int, deployment: DeploymentConfig) -> str:
    """`MODEL#INDEX:PROVIDER/UPSTREAM_MODEL`: how logs, metrics and cooldowns name it."""
    return f"{model}#{index}:{deployment.provider}/{deployment.model}"


@dataclass(frozen=True, slots=True)
class Route:
    model_name: str
    deployments: tuple[Deployment, ...]
    strategy: Strategy = "weighted"
    fallbacks: tuple[str, ...] = ()
    tool_calls: ToolCallsConfig = DEFAULT_TOOL_CALLS


class Router:
    __slots__ = ("_config", "_named")

    def __init__(self, config: Config) -> None:
        self._config = config
        self._named: dict[str, Route] = {}
        for name, merged in config.merged_models().items():
            settings = merged.settings
            deployments = []
            for index, deployment in enumerate(merged.deployments):
                provider = config.providers[deployment.provider]
                target = Target(
                    model_name=name,
                    provider_name=deployment.provider,
                    provider=provider,
                    upstream_model=deployment.model,
                    max_tokens=settings.max_tokens,
                    max_output_tokens=settings.max_output_tokens,
                    reasoning=settings.reasoning,
                    structured_output=settings.structured_output,
                    prompt_cache=settings.prompt_cache,
                )
                key = deployment_key(name, index, deployment)
                timeouts = effective_timeouts(provider, settings)
                deployments.append(Deployment(key, target, deployment.weight, timeouts))
            self._named[name] = Route(
                name,
                tuple(deployments),
                settings.strategy,
                tuple(settings.fallbacks),
                settings.tool_calls,
            )

    def resolve(self, model: str) -> Route:
        """The route for a client's `model`. Raises 404 for an unknown one, and 401 when no
        deployment has the key it needs."""
        route = self.lookup(model)
        if route is None:
            raise ModelNotFound(
                f"The model '{model}' does not exist on this proxy: use a configured model "
                "name (GET /v1/models) or PROVIDER/MODEL with a configured provider.",
                param="model",
            )
        return usable(route)

    def lookup(self, model: str) -> Route | None:
        """The route for `model` as configured, keys not checked (None when unknown): for a
        refusal that holds whatever the keys (a kind that cannot serve the API at all)."""
        return self._named.get(model) or self._direct(model)

    def served(self) -> list[tuple[str, str]]:
        """Every (configured model, provider) pair a configured model routes to."""
        return sorted(
            {
                (route.model_name, deployment.target.provider_name)
                for route in self._named.values()
                for deployment in route.deployments
            }
        )

    def fallback_routes(self, route: Route) -> list[Route]:
        """The routes of a model's fallbacks, in order, without those that cannot be used
        (no key): a fallback is a best effort, not a second source of errors."""
        routes = []
        for name in route.fallbacks:
            try:
                routes.append(usable(self._named[name]))
            except AuthenticationFailed:
                continue
        return routes

    def _direct(self, model: str) -> Route | None:
        provider_name, _, upstream_model = model.partition("/")
        provider = self._config.providers.get(provider_name)
        if provider is None or not upstream_model:
            return None
        target = Target(model, provider_name, provider, upstream_model)
        deployment = Deployment(f"{model}#0:{model}", target, 1, effective_timeouts(provider, None))
        return Route(model, (deployment,))


def usable(route: Route) -> Route:
    """The route without deployments whose provider's key came out empty; 401 if none is
    left, naming the provider, so a missing environment variable is easy to spot."""
    deployments = tuple(d for d in route.deployments if not d.target.provider.key_missing)
    if not deployments:
        provider_name = route.deployments[0].target.provider_name
        raise AuthenticationFailed(
            f"The provider '{provider_name}' has no API key: its configured key is "
            "empty (is its environment variable set?).",
            code="upstream_key_missing",
        )
    if len(deployments) == len(route.deployments):
        return route
    return Route(route.model_name, deployments, route.strategy, route.fallbacks, route.tool_calls)
