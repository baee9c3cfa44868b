"""The azure kind's addressing (CONTRACT.md, "Cloud kinds"): the deployments API with
`api_version`, the v1 API without; the key as `api-key`; the body the openai kind's; and the
config's rules for the kind."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import NativeRequest, Target

BASE = "https://my-resource.openai.azure.com"
BODY: dict[str, Any] = {"model": "gpt-azure", "messages": [{"role": "user", "content": "hi"}]}


def target(deployment: str = "my-gpt", **provider: Any) -> Target:
    config = ProviderConfig(kind="azure", base_url=BASE, **provider)
    return Target("gpt-azure", "az", config, deployment)


def test_the_deployments_api_puts_the_deployment_and_version_in_the_url() -> None:
    built = TRANSLATORS["azure"].build_request(
        parse_chat_request(orjson.dumps(BODY)), target(api_key="k", api_version="2024-10-21")
    )
    assert built.url == f"{BASE}/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21"
    assert built.headers["api-key"] == "k"
    assert "authorization" not in built.headers


def test_the_v1_api_sends_the_deployment_as_model() -> None:
    built = TRANSLATORS["azure"].build_request(
        parse_chat_request(orjson.dumps({**BODY, "stream": True})), target(api_key="k")
    )
    assert built.url == f"{BASE}/openai/v1/chat/completions"
    sent = orjson.loads(built.body)
    assert sent["model"] == "my-gpt"
    assert sent["stream_options"] == {"include_usage": True}  # the openai kind's, as on openai


def test_a_deployment_name_is_one_path_segment() -> None:
    built = TRANSLATORS["azure"].build_request(
        parse_chat_request(orjson.dumps(BODY)), target("a/b?c", api_key="k", api_version="v")
    )
    assert built.url == f"{BASE}/openai/deployments/a%2Fb%3Fc/chat/completions?api-version=v"


def test_without_a_key_a_configured_header_authorises() -> None:
    """An Entra ID token given as a header, no key: nothing of ours replaces it."""
    headers = {"Authorization": "Bearer entra-token"}
    built = TRANSLATORS["azure"].build_request(
        parse_chat_request(orjson.dumps(BODY)), target(headers=headers)
    )
    assert built.headers["Authorization"] == "Bearer entra-token"
    assert "api-key" not in built.headers


def test_embeddings_go_to_the_deployment() -> None:
    native = NativeRequest("/v1/embeddings", {"model": "gpt-azure", "input": "hi"}, {})
    translator = TRANSLATORS["azure"].embeddings
    assert translator is not None
    chat = parse_chat_request(orjson.dumps(BODY))
    built = translator(native).build_request(chat, target(api_key="k", api_version="v"))
    assert built.url == f"{BASE}/openai/deployments/my-gpt/embeddings?api-version=v"
    assert built.headers["api-key"] == "k"
    assert orjson.loads(built.body)["input"] == "hi"


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ({"kind": "azure"}, "base_url"),
        ({"kind": "openai", "api_version": "2024-10-21"}, "api_version"),
        ({"kind": "azure", "base_url": BASE, "responses": "native"}, "responses"),
    ],
)
def test_the_config_refuses_what_the_kind_cannot_do(provider: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ProviderConfig(**provider)
