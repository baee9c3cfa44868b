"""The cloud doubles (Bedrock, Vertex AI, Azure OpenAI) answering every request they accept with
the same two parallel tool calls (text first), stream or not, and keeping every request they
refused with their 400: for fuzzing, where nothing can be queued ahead and a refusal by the
provider (not by us) is the finding.

    with fuzz_doubles(tmp_path) as doubles:
        ... doubles.providers (a config's `providers:`), doubles.models (its `models:`)
        doubles.refusals (each refused body: where it went and the double's message)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.google_token_server import GoogleTokenServer, ServiceAccount
from tests.helpers.mock_anthropic import anthropic_error, message_events
from tests.helpers.mock_azure import MockAzure
from tests.helpers.mock_bedrock import API_KEY, MockBedrock, converse_answer, converse_stream
from tests.helpers.mock_gemini import gemini_tool_answer, gemini_tool_frames
from tests.helpers.mock_upstream import Exchange, Reply, anthropic_frames
from tests.helpers.mock_vertex import MockVertex
from tests.helpers.upstream_answers import CALLS, anthropic_tool_message

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
GEMINI_MODEL = "gemini-2.5-flash"
CLAUDE_MODEL = "claude-sonnet-4-5@20250929"
DEPLOYMENT = "my-gpt"
AZURE_KEY = "azure-fuzz-SECRET-777"
PROJECT, REGION = "test-project", "us-east5"
MODELS = {  # the config's model name for each (kind, flavour)
    "bedrock": "claude-bedrock",
    "vertex-gemini": "gemini-vertex",
    "vertex-claude": "claude-vertex",
    "azure": "gpt-azure",
}
TOOL_CALLS = [(call_id, name, json.loads(arguments)) for call_id, name, arguments in CALLS]
# (the double's answers, signed by no one: a fuzzed history naming a signature Gemini never
# issued would be refused for that, and that is not what is fuzzed here)
BEDROCK_REPLIES = {
    False: converse_answer("Let me check.", TOOL_CALLS),
    True: converse_stream("Let me check.", TOOL_CALLS),
}
VERTEX_REPLIES = {
    "generateContent": Reply(json=gemini_tool_answer(signed=False)),
    "streamGenerateContent": Reply(frames=gemini_tool_frames(signed=False)),
    "rawPredict": Reply(json=anthropic_tool_message()),
    "streamRawPredict": Reply(frames=anthropic_frames(message_events(anthropic_tool_message()))),
}


@dataclass(frozen=True)
class Refusal:
    """A body a double refused with its 400: the path it went to, the body, the message."""

    path: str
    body: Any
    message: str


def _refused(exchange: Exchange, reply: Reply, refusals: list[Refusal]) -> None:
    if reply.status == 400:
        refusals.append(Refusal(exchange.path, exchange.body, json.dumps(reply.json)))


class AnsweringBedrock(MockBedrock):
    """MockBedrock answering whatever it accepts, and keeping what it refuses."""

    def __init__(self, refusals: list[Refusal]) -> None:
        super().__init__()
        self.refusals = refusals

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        reply = super()._screen_request(exchange)
        if reply is not None:
            _refused(exchange, reply, self.refusals)
            return reply
        return BEDROCK_REPLIES["/converse-stream" in exchange.path]


class AnsweringVertex(MockVertex):
    """MockVertex answering whatever it accepts (Gemini or Claude), keeping what it refuses."""

    def __init__(self, tokens: GoogleTokenServer, refusals: list[Refusal]) -> None:
        super().__init__(tokens.issued.__contains__, PROJECT)
        self.refusals = refusals

    def _screen_request(self, exchange: Exchange) -> Reply | None:
        try:
            reply = super()._screen_request(exchange)
        except (AttributeError, TypeError, KeyError):  # the rules read a well-formed history
            message = "messages: Input should be a valid list of message objects"
            reply = Reply(400, json=anthropic_error("invalid_request_error", message))
        if reply is not None:
            _refused(exchange, reply, self.refusals)
            return reply
        method = exchange.path.partition("?")[0].rpartition(":")[2]
        return VERTEX_REPLIES[method]


@dataclass
class FuzzDoubles:
    """The running doubles, a config's providers and models for them, and their refusals."""

    providers: dict[str, dict[str, Any]]
    models: list[dict[str, Any]]
    refusals: list[Refusal] = field(default_factory=list)


@contextmanager
def fuzz_doubles(directory: Path) -> Iterator[FuzzDoubles]:
    """The three doubles and a Google token endpoint on 127.0.0.1 (Bedrock by API key,
    Vertex by a service-account file in `directory`, Azure on the deployments API)."""
    refusals: list[Refusal] = []
    with ExitStack() as stack:
        tokens = stack.enter_context(GoogleTokenServer(ServiceAccount.generate()))
        bedrock = stack.enter_context(AnsweringBedrock(refusals))
        vertex = stack.enter_context(AnsweringVertex(tokens, refusals))
        azure = stack.enter_context(MockAzure(AZURE_KEY, (DEPLOYMENT,)))
        key_file = tokens.account.write_key_file(directory / "sa.json", tokens.token_uri)
        providers = {
            "aws": {
                "kind": "bedrock",
                "region": bedrock.region,
                "base_url": bedrock.base_url,
                "api_key": API_KEY,
            },
            "gcp": {
                "kind": "vertex",
                "project": PROJECT,
                "region": REGION,
                "base_url": vertex.base_url,
                "credentials": str(key_file),
            },
            "az": {
                "kind": "azure",
                "base_url": azure.base_url,
                "api_key": AZURE_KEY,
                "api_version": "2024-10-21",
            },
        }
        models: list[dict[str, Any]] = [
            {"name": MODELS["bedrock"], "provider": "aws", "model": BEDROCK_MODEL},
            {"name": MODELS["vertex-gemini"], "provider": "gcp", "model": GEMINI_MODEL},
            {"name": MODELS["vertex-claude"], "provider": "gcp", "model": CLAUDE_MODEL},
            {"name": MODELS["azure"], "provider": "az", "model": DEPLOYMENT},
        ]
        for model in models:
            model["max_tokens"] = 1024
        yield FuzzDoubles(providers, models, refusals)
