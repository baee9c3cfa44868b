"""The scenarios of a benchmark run, and what a target is. A target is anything that answers
OpenAI chat completions at a base URL; `direct` is the mock itself, hit in its own format, which
gives every scenario its floor (and shows the mock's own ceiling at the same concurrency)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench import mock_bodies
from bench.check import CheckFn, checker
from bench.payload import (
    UPSTREAM_MODEL,
    Client,
    Format,
    anthropic_request,
    embeddings_base64_request,
    embeddings_request,
    openai_request,
    responses_request,
)

SHORT_STREAM_CHUNKS = 10


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    upstream: Format  # the mock format behind the target
    stream: bool
    concurrency: int
    chunks: int | None = None  # argument deltas per stream; None: the mock's default (50)
    base: str | None = None  # for streams: the shorter stream scenario; CPU per chunk is the
    #                          difference in CPU per stream over the difference in events
    client: Client = "openai"  # the API the client speaks: anthropic = /v1/messages,
    #                            responses = /v1/responses, embeddings = /v1/embeddings
    versus: str | None = None  # a scenario to run alongside it for comparison (picked with it)
    base64: bool = False  # embeddings: ask for base64 (the openai SDK's default)
    sigv4: bool = False  # bedrock: the model whose provider signs with SigV4 (no API key)
    budget: str = ""  # against `versus`: the budget, shown beside the ratio

    @property
    def model_key(self) -> str:
        """Which of a target's models this scenario asks for (Target.models)."""
        return "bedrock-sigv4" if self.sigv4 else self.upstream

    @property
    def model_suffix(self) -> str:
        """Asks the mock for this many deltas (it reads `-nK` at the end of the model id)."""
        return "" if self.chunks is None else f"-n{self.chunks}"


# Issue 30's budget: a chunk streamed from a Bedrock upstream (binary event-stream frames) costs
# <= 1.3x the same chunk from an anthropic-kind upstream (SSE). The mock streams the same answer
# both ways: the same two text deltas, the same argument fragments (bench/mock_bodies.py). The
# Bedrock models use a Bearer API key; the `sigv4` ones sign every request (botocore, the
# credentials from the environment), a per-request cost that per chunk cancels out.
BEDROCK_SCENARIOS = (
    Scenario(
        "bedrock stream c=8",
        "bedrock",
        stream=True,
        concurrency=8,
        base="bedrock short stream c=8",
        versus="anthropic stream c=8",
        budget="<= 1.3x per chunk (issue 30)",
    ),
    Scenario(
        "bedrock short stream c=8",
        "bedrock",
        stream=True,
        concurrency=8,
        chunks=SHORT_STREAM_CHUNKS,
    ),
    Scenario(
        "bedrock sigv4 stream c=8",
        "bedrock",
        stream=True,
        concurrency=8,
        base="bedrock sigv4 short stream c=8",
        versus="bedrock stream c=8",
        sigv4=True,
    ),
    Scenario(
        "bedrock sigv4 short stream c=8",
        "bedrock",
        stream=True,
        concurrency=8,
        chunks=SHORT_STREAM_CHUNKS,
        sigv4=True,
    ),
    Scenario(
        "bedrock non-stream c=32",
        "bedrock",
        stream=False,
        concurrency=32,
        versus="anthropic non-stream c=32",
    ),
    Scenario(
        "bedrock sigv4 non-stream c=32",
        "bedrock",
        stream=False,
        concurrency=32,
        versus="bedrock non-stream c=32",
        sigv4=True,
        budget="signing <= 100 us CPU per request (issue 30)",
    ),
)

SCENARIOS = (
    Scenario("non-stream c=1", "openai", stream=False, concurrency=1),
    Scenario("non-stream c=32", "openai", stream=False, concurrency=32),
    Scenario("non-stream c=64", "openai", stream=False, concurrency=64),
    Scenario("stream c=8", "openai", stream=True, concurrency=8, base="short stream c=8"),
    Scenario("short stream c=8", "openai", stream=True, concurrency=8, chunks=SHORT_STREAM_CHUNKS),
    Scenario("anthropic non-stream c=32", "anthropic", stream=False, concurrency=32),
    Scenario(
        "anthropic stream c=8",
        "anthropic",
        stream=True,
        concurrency=8,
        base="anthropic short stream c=8",
    ),
    Scenario(
        "anthropic short stream c=8",
        "anthropic",
        stream=True,
        concurrency=8,
        chunks=SHORT_STREAM_CHUNKS,
    ),
    *BEDROCK_SCENARIOS,  # next to the anthropic cells they are compared with
    Scenario(
        "messages stream c=8",
        "openai",
        stream=True,
        concurrency=8,
        base="messages short stream c=8",
        client="anthropic",
    ),
    Scenario(
        "messages short stream c=8",
        "openai",
        stream=True,
        concurrency=8,
        chunks=SHORT_STREAM_CHUNKS,
        client="anthropic",
    ),
    Scenario(
        "responses stream c=8",
        "openai",
        stream=True,
        concurrency=8,
        base="responses short stream c=8",
        client="responses",
    ),
    Scenario(
        "responses short stream c=8",
        "openai",
        stream=True,
        concurrency=8,
        chunks=SHORT_STREAM_CHUNKS,
        client="responses",
    ),
    Scenario(
        "responses non-stream c=32", "openai", stream=False, concurrency=32, client="responses"
    ),
    # Issue 23: the per-chunk cost at c=32 (32 paced streams in flight), OpenAI and Anthropic
    # upstreams; each against its short stream at the same concurrency.
    Scenario("stream c=32", "openai", stream=True, concurrency=32, base="short stream c=32"),
    Scenario(
        "short stream c=32", "openai", stream=True, concurrency=32, chunks=SHORT_STREAM_CHUNKS
    ),
    Scenario(
        "anthropic stream c=32",
        "anthropic",
        stream=True,
        concurrency=32,
        base="anthropic short stream c=32",
    ),
    Scenario(
        "anthropic short stream c=32",
        "anthropic",
        stream=True,
        concurrency=32,
        chunks=SHORT_STREAM_CHUNKS,
    ),
    # A proxy that needs a core for its streams' events reads several events per read: its
    # CPU per chunk then falls with more streams in flight (bench/RESULTS.md, issue 23).
    Scenario("stream c=64", "openai", stream=True, concurrency=64, base="short stream c=64"),
    Scenario(
        "short stream c=64", "openai", stream=True, concurrency=64, chunks=SHORT_STREAM_CHUNKS
    ),
    Scenario("non-stream c=32 (again)", "openai", stream=False, concurrency=32),
    # Issue 21's budget: embeddings on an openai upstream <= 1.2x the CPU per request of a
    # non-stream chat request of the same body size (bench/payload.py pads the body to it).
    Scenario(
        "embeddings c=32",
        "openai",
        stream=False,
        concurrency=32,
        client="embeddings",
        versus="non-stream c=32",
        budget="<= 1.2x per request (issue 21)",
    ),
    Scenario(
        "embeddings base64 c=32",
        "openai",
        stream=False,
        concurrency=32,
        client="embeddings",
        versus="non-stream c=32",
        base64=True,
        budget="<= 1.2x per request (issue 21)",
    ),
)

CLIENT_PATHS: dict[Client, str] = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/v1/responses",
    "embeddings": "/v1/embeddings",
}
CLIENT_REQUESTS = {
    "openai": openai_request,
    "anthropic": anthropic_request,
    "responses": responses_request,
    "embeddings": embeddings_request,
}


def stream_events(upstream: Format, arg_chunks: int) -> int:
    """How many events the mock sends for one stream (SSE with its `[DONE]`, or Bedrock's
    event-stream frames)."""
    if upstream == "bedrock":
        return len(mock_bodies.bedrock_events(arg_chunks))
    if upstream == "anthropic":
        return len(mock_bodies.anthropic_events(arg_chunks))
    return len(mock_bodies.openai_events(arg_chunks, include_usage=False))


@dataclass(slots=True)
class Target:
    name: str
    base_url: str  # http://127.0.0.1:PORT, without /v1
    pid: int | None = None  # main process; CPU and RSS are summed over its tree
    models: dict[str, str] = field(  # by Scenario.model_key
        default_factory=lambda: {
            "openai": "bench-openai",
            "anthropic": "bench-anthropic",
            "bedrock": "bench-bedrock",
            "bedrock-sigv4": "bench-bedrock-sigv4",
        }
    )
    headers: dict[Format, dict[str, str]] = field(default_factory=dict)
    translates: bool = True  # can serve an OpenAI client from an Anthropic upstream
    direct: bool = False  # the mock itself: spoken to in the upstream's own format
    idle_rss: int | None = None  # bytes, after start-up, before any request
    messages_api: bool = False  # serves Anthropic clients on /v1/messages from any upstream
    responses_api: bool = False  # serves Responses API clients on /v1/responses
    embeddings_api: bool = False  # serves /v1/embeddings (to the openai upstream)
    bedrock: bool = False  # has the bench-bedrock models (Bedrock kind; the mock is not hit
    #                        directly in Bedrock's format: the load generator checks chat)

    def serves(self, scenario: Scenario) -> bool:
        if scenario.upstream == "bedrock":
            return self.bedrock and scenario.client == "openai"
        if scenario.client == "embeddings":
            return self.direct or self.embeddings_api
        if scenario.client == "anthropic":
            return self.messages_api
        if scenario.client == "responses":
            return self.responses_api
        return self.direct or self.translates or scenario.upstream == "openai"

    def request(self, scenario: Scenario) -> tuple[str, bytes, dict[str, str], CheckFn]:
        """URL, body, extra headers and answer check for one scenario."""
        if scenario.client == "embeddings":
            direct = self.direct
            model = UPSTREAM_MODEL["openai"] if direct else self.models[scenario.model_key]
            build = embeddings_base64_request if scenario.base64 else embeddings_request
            check = checker("embeddings", stream=False, packed=scenario.base64)
            headers = {} if direct else self.headers.get(scenario.upstream, {})
            return self.base_url + "/v1/embeddings", build(model), headers, check
        if self.direct:
            model = UPSTREAM_MODEL[scenario.upstream] + scenario.model_suffix
            if scenario.upstream == "anthropic":
                body = anthropic_request(model, stream=scenario.stream)
                return (
                    self.base_url + "/v1/messages",
                    body,
                    {},
                    checker("anthropic", stream=scenario.stream),
                )
            body = openai_request(model, stream=scenario.stream)
        elif scenario.client != "openai":
            model = self.models[scenario.model_key] + scenario.model_suffix
            body = CLIENT_REQUESTS[scenario.client](model, stream=scenario.stream)
            check = checker(scenario.client, stream=scenario.stream)
            headers = self.headers.get(scenario.upstream, {})
            return self.base_url + CLIENT_PATHS[scenario.client], body, headers, check
        else:
            model = self.models[scenario.model_key] + scenario.model_suffix
            body = openai_request(model, stream=scenario.stream)
        headers = self.headers.get(scenario.upstream, {})
        url = self.base_url + "/v1/chat/completions"
        return url, body, headers, checker("openai", stream=scenario.stream)
