"""The vertex kind's addressing (CONTRACT.md, "Cloud kinds"): Gemini and Claude models each
through their family's translation, on Vertex's URLs, with no key header of AI Studio's or
Anthropic's; Claude's body without `model` and with Vertex's `anthropic_version`; errors read
in the shape they came in; the config's rules for the kind."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from app.config import ProviderConfig
from app.openai_types import parse_chat_request
from app.translators import TRANSLATORS
from app.translators.base import NativeRequest, Target, translator_for

BODY: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
MODELS = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers"


def target(model: str, **provider: Any) -> Target:
    config = ProviderConfig(kind="vertex", project="p", region="us-east5", **provider)
    return Target("name", "gcp", config, model, max_tokens=100)


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_goes_to_the_google_publisher(stream: bool) -> None:
    gemini = target("gemini-2.5-flash")
    request = parse_chat_request(orjson.dumps({**BODY, "stream": stream}))
    built = translator_for(TRANSLATORS, gemini).build_request(request, gemini)
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    assert built.url == f"{MODELS}/google/models/gemini-2.5-flash:{method}"
    assert "contents" in orjson.loads(built.body)
    assert {name.lower() for name in built.headers} == {"content-type"}


@pytest.mark.parametrize("stream", [False, True])
def test_claude_goes_to_the_anthropic_publisher_without_model(stream: bool) -> None:
    claude = target("claude-sonnet-4-5@20250929")
    request = parse_chat_request(orjson.dumps({**BODY, "stream": stream}))
    built = translator_for(TRANSLATORS, claude).build_request(request, claude)
    method = "streamRawPredict" if stream else "rawPredict"
    assert built.url == f"{MODELS}/anthropic/models/claude-sonnet-4-5@20250929:{method}"
    sent = orjson.loads(built.body)
    assert "model" not in sent
    assert sent["anthropic_version"] == "vertex-2023-10-16"
    assert sent["max_tokens"] == 100
    assert {name.lower() for name in built.headers} == {"content-type"}


def test_a_messages_client_is_relayed_to_claude_and_count_tokens_to_its_counter() -> None:
    claude = target("claude-sonnet-4-5@20250929")
    native = translator_for(TRANSLATORS, claude).native
    assert native is not None
    asked = {"model": "name", "max_tokens": 9, "messages": BODY["messages"], "stream": True}
    relayed = native(
        NativeRequest("/v1/messages", asked, {"anthropic-beta": "interleaved-thinking-2025-05-14"})
    )
    built = relayed.build_request(parse_chat_request(orjson.dumps(BODY)), claude)
    assert built.url.endswith(":streamRawPredict")
    assert built.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    without_model = {name: value for name, value in asked.items() if name != "model"}
    assert orjson.loads(built.body) == {**without_model, "anthropic_version": "vertex-2023-10-16"}
    counting = native(NativeRequest("/v1/messages/count_tokens", {"messages": []}, {}))
    counted = counting.build_request(parse_chat_request(orjson.dumps(BODY)), claude)
    assert counted.url == f"{MODELS}/anthropic/models/count-tokens:rawPredict"
    assert orjson.loads(counted.body)["model"] == "claude-sonnet-4-5@20250929"


def test_gemini_on_vertex_has_no_native_messages_relay_and_no_embeddings() -> None:
    gemini = translator_for(TRANSLATORS, target("gemini-2.5-pro"))
    assert (gemini.native, gemini.embeddings) == (None, None)


def test_errors_are_read_in_the_shape_they_came_in() -> None:
    claude = translator_for(TRANSLATORS, target("claude-opus-4"))
    anthropic_shaped = (
        b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'
    )
    google_shaped = b'{"error": {"code": 401, "message": "bad token", "status": "UNAUTHENTICATED"}}'
    assert claude.parse_error(529, anthropic_shaped, {}).message == "busy"
    refused = claude.parse_error(401, google_shaped, {})
    assert (refused.status, refused.message) == (401, "bad token")


def test_the_global_region_has_no_region_prefix() -> None:
    config = ProviderConfig(kind="vertex", project="p", region="global")
    assert config.base_url == "https://aiplatform.googleapis.com"


@pytest.mark.parametrize(
    "provider",
    [
        {"kind": "vertex", "region": "us-east5"},
        {"kind": "vertex", "project": "p"},
        {"kind": "gemini", "project": "p"},
        {"kind": "openai", "credentials": "sa.json"},
    ],
)
def test_the_config_refuses_what_the_kind_cannot_do(provider: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ProviderConfig(**provider)
