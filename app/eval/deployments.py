"""`eval --deployments`: each deployment of the asked models run on its own, so the table shows
which host of a model calls tools best (what the router's quality tracking sees, per
deployment, named `MODEL#INDEX:PROVIDER/UPSTREAM_MODEL` as in logs and metrics)."""

from __future__ import annotations

from app.config import Config
from app.routing.router import deployment_key


def pinned(config: Config, models: list[str]) -> tuple[Config, list[tuple[str, str]]]:
    """The config plus one model per deployment of `models`, named by the deployment's key and
    served by it alone: no fallbacks, no balancing, and calls relayed as they came (on_invalid
    `pass`, no quality cooldown), so each row measures that host and nothing else. Returns the
    config and the (model, deployment key) pairs, in order."""
    merged = config.merged_models()
    extra = []
    pairs = []
    for model in models:
        entry = merged[model]
        for index, deployment in enumerate(entry.deployments):
            key = deployment_key(model, index, deployment)
            tool_calls = entry.settings.tool_calls.model_copy(
                update={"on_invalid": "pass", "min_valid_rate": None}
            )
            single = {
                "name": key,
                "provider": deployment.provider,
                "model": deployment.model,
                "weight": deployment.weight,
                "deployments": None,
                "fallbacks": [],
                "tool_calls": tool_calls,
            }
            extra.append(entry.settings.model_copy(update=single))
            pairs.append((model, key))
    return config.model_copy(update={"models": [*config.models, *extra]}), pairs
