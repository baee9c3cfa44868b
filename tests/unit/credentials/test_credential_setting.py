"""The setting an upstream auth refusal names: the provider's api_key when it has one, else
where its kind's credentials come from (CONTRACT.md, Errors)."""

from __future__ import annotations

import pytest

from app.config import ProviderConfig
from app.credentials.providers import credential_setting


@pytest.mark.parametrize(
    ("fields", "setting"),
    [
        ({"kind": "openai", "api_key": "k"}, "providers.p.api_key"),
        ({"kind": "azure", "base_url": "https://a.test", "api_key": "k"}, "providers.p.api_key"),
        ({"kind": "bedrock", "region": "us-east-1", "api_key": "k"}, "providers.p.api_key"),
        ({"kind": "bedrock", "region": "us-east-1"}, "the AWS credential chain"),
        ({"kind": "vertex", "project": "x", "region": "global"}, "providers.p.credentials"),
    ],
)
def test_names_the_setting_to_fix(fields: dict[str, str], setting: str) -> None:
    assert setting in credential_setting("p", ProviderConfig(**fields))  # type: ignore[arg-type]
