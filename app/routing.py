"""Model name -> the target that serves it: an exact configured name first, then
`PROVIDER/UPSTREAM_MODEL`, else 404 model_not_found."""

from __future__ import annotations

from app.config import Config
from app.errors import AuthenticationFailed, ModelNotFound
from app.translators.base import Target


class Router:
    __slots__ = ("_named", "_providers")

    def __init__(self, config: Config) -> None:
        self._providers = config.providers
        self._named = {
            model.name: Target(
                model_name=model.name,
                provider_name=model.provider,
                provider=config.providers[model.provider],
                upstream_model=model.model,
                max_tokens=model.max_tokens,
            )
            for model in config.models
        }

    def resolve(self, model: str) -> Target:
        target = self._named.get(model) or self._direct(model)
        if target is None:
            raise ModelNotFound(
                f"The model '{model}' does not exist on this proxy: use a configured model "
                "name (GET /v1/models) or PROVIDER/MODEL with a configured provider.",
                param="model",
            )
        if target.provider.key_missing:
            raise AuthenticationFailed(
                f"The provider '{target.provider_name}' has no API key: its configured key is "
                "empty (is its environment variable set?).",
                code="upstream_key_missing",
            )
        return target

    def _direct(self, model: str) -> Target | None:
        provider_name, _, upstream_model = model.partition("/")
        provider = self._providers.get(provider_name)
        if provider is None or not upstream_model:
            return None
        return Target(model, provider_name, provider, upstream_model)
