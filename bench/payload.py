"""The one answer every benchmark request gets, and the requests that ask for it.

The mock upstream serves this answer (a text preamble, then two parallel tool calls with ~200-byte
argument JSON each) and the load generator checks every proxied response against it, so both
sides share this module and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

Format = Literal["openai", "anthropic", "bedrock"]  # bedrock: Converse, its binary event stream
Client = Literal["openai", "anthropic", "responses", "embeddings"]  # what the client speaks:
#                   chat, messages, OpenAI's Responses API or embeddings (/v1/embeddings)

PREAMBLE = "I'll look up the weather and the stock price at once."
PREAMBLE_PARTS = ("I'll look up the weather", " and the stock price at once.")

# Escapes, quotes and non-ASCII on purpose: fragments split them, and they must survive.
WEATHER_ARGS: dict[str, Any] = {
    "location": {"city": "São Paulo", "country": "BR", "lat": -23.5505, "lon": -46.6333},
    "unit": "celsius",
    "days": 5,
    "include": ["hourly", "alerts", "air_quality"],
    "note": 'say "hi" \\ then \t tab, 東京 — ok',
}
STOCK_ARGS: dict[str, Any] = {
    "ticker": "ACME",
    "exchange": "NASDAQ",
    "range": {"from": "2025-01-01", "to": "2025-06-30"},
    "interval": "1d",
    "fields": ["open", "high", "low", "close", "volume"],
    "adjusted": True,
    "currency": "EUR",
    "limit": 250,
}

UPSTREAM_MODEL = {
    "openai": "mock-model",
    "anthropic": "mock-claude",
    "bedrock": "mock.claude-v1:0",  # a Bedrock id's `:` is percent-encoded in the path
}
USAGE_IN, USAGE_OUT = 412, 97


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the exact JSON text the upstream produced (compact, UTF-8)

    @property
    def input(self) -> Any:
        return orjson.loads(self.arguments)


def _call(call_id: str, name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(call_id, name, orjson.dumps(args).decode())


# Each upstream format has its own id style; a proxy must pass the ids through unchanged.
TOOL_CALLS: dict[Format, tuple[ToolCall, ...]] = {
    "openai": (
        _call("call_bench0weather0000000", "get_weather", WEATHER_ARGS),
        _call("call_bench1stock000000000", "get_stock_price", STOCK_ARGS),
    ),
    "anthropic": (
        _call("toolu_01Bench0Weather000000", "get_weather", WEATHER_ARGS),
        _call("toolu_01Bench1Stock00000000", "get_stock_price", STOCK_ARGS),
    ),
    "bedrock": (
        _call("tooluse_Bench0Weather0000000", "get_weather", WEATHER_ARGS),
        _call("tooluse_Bench1Stock000000000", "get_stock_price", STOCK_ARGS),
    ),
}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a place",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string"},
                            "country": {"type": "string"},
                            "lat": {"type": "number"},
                            "lon": {"type": "number"},
                        },
                        "required": ["city"],
                    },
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer"},
                    "include": {"type": "array", "items": {"type": "string"}},
                    "note": {"type": "string"},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_stock_price",
            "description": "Price history of a stock",
            "parameters": {
                "type": "object",
                "properties": {
                    "ticker": {"type": "string"},
                    "exchange": {"type": "string"},
                    "range": {
                        "type": "object",
                        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                    },
                    "interval": {"type": "string"},
                    "fields": {"type": "array", "items": {"type": "string"}},
                    "adjusted": {"type": "boolean"},
                    "currency": {"type": "string"},
                },
                "required": ["ticker"],
            },
        },
    },
]

SYSTEM = "You are a concise assistant. Call tools when they help."
USER = "What's the weather in São Paulo this week, and how did ACME trade in H1 2025?"


def openai_request(model: str, *, stream: bool) -> bytes:
    """What an OpenAI SDK client would send (max_tokens included, as Anthropic needs one)."""
    return orjson.dumps(
        {
            "model": model,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
            "tools": TOOLS,
            "tool_choice": "auto",
            "max_tokens": 1024,
            "stream": stream,
        }
    )


def anthropic_request(model: str, *, stream: bool) -> bytes:
    """The same question in Anthropic's own format (for hitting the mock directly)."""
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in TOOLS
    ]
    return orjson.dumps(
        {
            "model": model,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": USER}],
            "tools": tools,
            "max_tokens": 1024,
            "stream": stream,
        }
    )


def responses_request(model: str, *, stream: bool) -> bytes:
    """The same question as an OpenAI Responses API body (/v1/responses): the system text as
    `instructions`, the user text as `input`, the tools flattened to Responses' shape."""
    tools = [
        {
            "type": "function",
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "parameters": t["function"]["parameters"],
        }
        for t in TOOLS
    ]
    return orjson.dumps(
        {
            "model": model,
            "instructions": SYSTEM,
            "input": USER,
            "tools": tools,
            "tool_choice": "auto",
            "max_output_tokens": 1024,
            "stream": stream,
        }
    )


EMBEDDING_INPUTS = 3
EMBEDDING_SIZE = 1536  # text-embedding-3-small's


def embedding_vector(index: int) -> list[float]:
    """The mock's vector for input `index`: fixed values float32 holds exactly (k / 2**20), so
    the base64 and float answers carry the same numbers and the checks compare exactly."""
    return [((index * 7919 + i * 104729) % 2**21 - 2**20) / 2**20 for i in range(EMBEDDING_SIZE)]


EMBEDDING_VECTORS = tuple(embedding_vector(index) for index in range(EMBEDDING_INPUTS))


def embeddings_request(
    model: str, *, stream: bool = False, encoding_format: str = "float"
) -> bytes:
    """An embeddings body (`EMBEDDING_INPUTS` texts) padded to the byte size of the non-stream
    chat body for the same model, so the two compare per request on equal bodies (issue 21's
    budget: <= 1.2x the CPU of a chat request of the same body size). `stream` is ignored
    (embeddings have none); it is there to share CLIENT_REQUESTS' signature."""
    target = len(openai_request(model, stream=False))
    texts = [USER] * EMBEDDING_INPUTS

    def body() -> bytes:
        return orjson.dumps({"model": model, "input": texts, "encoding_format": encoding_format})

    short = target - len(body())
    if short > 0:
        texts[-1] += " " + "x" * (short - 1)
    return body()


def embeddings_base64_request(model: str, *, stream: bool = False) -> bytes:
    """What the openai SDK sends by default: `encoding_format: "base64"`."""
    return embeddings_request(model, stream=stream, encoding_format="base64")


def split_fragments(text: str, count: int) -> list[str]:
    """`text` cut into `count` nearly equal, non-empty pieces (cuts land inside escapes and
    multi-byte characters' neighbours, as a model's tokens do)."""
    count = max(1, min(count, len(text)))
    size, extra = divmod(len(text), count)
    pieces, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def fragment_counts(total: int) -> tuple[int, int]:
    """How `total` argument-delta chunks are shared between the two calls."""
    first = total // 2
    return first, total - first
