"""Model resolution: configured name, then PROVIDER/MODEL, else model_not_found."""

from __future__ import annotations

import pytest

from app.config import parse_config
from app.errors import AuthenticationFailed, ModelNotFound
from app.routing.router import Router

CONFIG = parse_config(
    {
        "providers": {
            "oa": {"kind": "openai", "api_key": "k"},
            "an": {"kind": "anthropic", "api_key": "${UNSET}"},
        },
        "models": [
            {"name": "fast", "provider": "oa", "model": "gpt-4o-mini"},
            {"name": "oa/shadowed", "provider": "oa", "model": "real-id"},
            {"name": "claude", "provider": "an", "model": "claude-x", "max_tokens": 100},
        ],
    },
    "c.yaml",
    {},
)


@pytest.mark.parametrize(
    ("asked", "provider", "upstream_model"),
    [
        ("fast", "oa", "gpt-4o-mini"),
        ("oa/gpt-4.1", "oa", "gpt-4.1"),
        ("oa/org/model:tag", "oa", "org/model:tag"),
        ("oa/shadowed", "oa", "real-id"),  # an exact name wins over the direct form
    ],
)
def test_resolves(asked: str, provider: str, upstream_model: str) -> None:
    route = Router(CONFIG).resolve(asked)
    (deployment,) = route.deployments
    target = deployment.target
    assert (target.model_name, target.provider_name, target.upstream_model) == (
        asked,
        provider,
        upstream_model,
    )


@pytest.mark.parametrize("asked", ["nope", "unknown/gpt", "oa/", "/gpt", "FAST"])
def test_unknown_model_is_model_not_found(asked: str) -> None:
    with pytest.raises(ModelNotFound) as caught:
        Router(CONFIG).resolve(asked)
    assert (caught.value.status, caught.value.code, caught.value.param) == (
        404,
        "model_not_found",
        "model",
    )


def test_provider_with_missing_key_answers_401() -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        Router(CONFIG).resolve("claude")
    assert caught.value.status == 401
    assert "'an'" in caught.value.message
