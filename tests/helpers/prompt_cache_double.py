"""Test doubles that keep a prompt cache the way each provider documents it (PROTOCOLS J), and
count what they read and wrote.

Explicit (Anthropic's Messages API, Bedrock Converse; "Prompt caching" in each one's docs):
the prompt is a list of blocks in the order tools, system, messages; a breakpoint
(`cache_control` on a block, or a `cachePoint` after it) writes the prefix up to and including
its block; a request reads the longest cached prefix ending at one of its breakpoints or at
most LOOKBACK blocks before one; a prefix under MIN_TOKENS is neither written nor read; more
than 4 breakpoints is the provider's 400. A breakpoint marker is not part of the prefix (the
same blocks, marked elsewhere, are the same prefix). Anthropic's API ignores Claude Code's
billing line (it is its own); every other provider sees it as text.

Automatic (OpenAI, Gemini implicit caching): the longest prefix shared with an earlier
request, counted from MIN_TOKENS in STEP-token steps; nothing to mark.

Tokens are approximated as CHARS_PER_TOKEN characters of the block's canonical JSON (the
figure Anthropic and OpenAI give as a rule of thumb); what matters here is the share read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

CHARS_PER_TOKEN = 4
MIN_TOKENS = 1024  # Claude Sonnet, Bedrock Claude Sonnet; OpenAI; Gemini 2.5 Flash
LOOKBACK = 20  # Anthropic: "up to approximately 20 content blocks before" a breakpoint
MAX_BREAKPOINTS = 4
STEP = 128  # OpenAI: hits in 128-token increments after the first 1024
ANTHROPIC_TOO_MANY = "A maximum of 4 blocks with cache_control may be provided. Found {}."
BEDROCK_TOO_MANY = "A maximum of 4 cachePoint blocks are allowed, found {}."  # bedrock_rules
BILLING_PREFIX = "x-anthropic-billing-header:"
WRITE_PRICE, READ_PRICE = 1.25, 0.1  # of the input price (Anthropic, Bedrock 5-minute cache)


class TooManyBreakpoints(Exception):
    """The provider's 400 for a fifth breakpoint; str() is its message."""


@dataclass
class Usage:
    """One request's input, split as the provider reports it."""

    uncached: int
    read: int
    write: int

    @property
    def total(self) -> int:
        return self.uncached + self.read + self.write


def tokens(raw: bytes) -> int:
    return max(1, len(raw) // CHARS_PER_TOKEN)


@dataclass
class Counters:
    """What a double served: every request's usage, in order."""

    usages: list[Usage] = field(default_factory=list)

    @property
    def read(self) -> int:
        return sum(usage.read for usage in self.usages)

    @property
    def written(self) -> int:
        return sum(usage.write for usage in self.usages)

    @property
    def total(self) -> int:
        return sum(usage.total for usage in self.usages)

    def cost(self) -> float:
        """Input cost in units of the input price (writes 1.25x, reads 0.1x)."""
        return sum(u.uncached + u.write * WRITE_PRICE + u.read * READ_PRICE for u in self.usages)

    def read_share(self, turn: int) -> float:
        usage = self.usages[turn]
        return usage.read / usage.total


# --- explicit: blocks and breakpoints --------------------------------------------------------


def _clean(block: Any, marker: str) -> Any:
    if isinstance(block, dict):
        return {key: _clean(value, marker) for key, value in block.items() if key != marker}
    if isinstance(block, list):
        return [_clean(item, marker) for item in block]
    return block


def _marked(block: Any) -> bool:
    """A block with `cache_control`, on it or on a block nested in it (a tool_result's)."""
    if not isinstance(block, dict):
        return False
    if "cache_control" in block:
        return True
    inner = block.get("content")
    return isinstance(inner, list) and any(_marked(item) for item in inner)


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """(canonical bytes, is a breakpoint) per block: tools, system, messages."""
    out: list[tuple[bytes, bool]] = []
    for tool in body.get("tools") or ():
        out.append((orjson.dumps(_clean(tool, "cache_control")), _marked(tool)))
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or ():
        if str(block.get("text", "")).startswith(BILLING_PREFIX):
            continue  # Anthropic's own API takes the billing line out of the prompt
        out.append((orjson.dumps(_clean(block, "cache_control")), _marked(block)))
    for message in body.get("messages") or ():
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for position, block in enumerate(content):
            head = message["role"].encode() if position == 0 else b""
            out.append((head + orjson.dumps(_clean(block, "cache_control")), _marked(block)))
    return out


def bedrock_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The same for Converse: a `cachePoint` marks the block before it."""
    out: list[tuple[bytes, bool]] = []

    def add(blocks: list[dict[str, Any]], head: bytes = b"") -> None:
        for block in blocks:
            if "cachePoint" in block:
                if out:
                    out[-1] = (out[-1][0], True)
                continue
            out.append((head + orjson.dumps(block), False))
            head = b""

    add((body.get("toolConfig") or {}).get("tools") or [])
    add(body.get("system") or [])
    for message in body.get("messages") or ():
        add(message["content"], message["role"].encode())
    return out


@dataclass
class ExplicitCache:
    """Anthropic's or Bedrock's cache: `serve(body)` -> the request's Usage."""

    kind: str  # "anthropic" | "bedrock"
    entries: set[bytes] = field(default_factory=set)
    counters: Counters = field(default_factory=Counters)

    def serve(self, body: dict[str, Any]) -> Usage:
        blocks = anthropic_blocks(body) if self.kind == "anthropic" else bedrock_blocks(body)
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        if len(breakpoints) > MAX_BREAKPOINTS:
            text = ANTHROPIC_TOO_MANY if self.kind == "anthropic" else BEDROCK_TOO_MANY
            raise TooManyBreakpoints(text.format(len(breakpoints)))
        digests, sizes, running, size = [], [], hashlib.sha256(), 0
        for raw, _ in blocks:
            running.update(len(raw).to_bytes(8, "big") + raw)
            size += tokens(raw)
            digests.append(running.copy().digest())
            sizes.append(size)
        read = 0
        for point in breakpoints:
            for end in range(point, max(-1, point - LOOKBACK - 1), -1):
                if digests[end] in self.entries:
                    read = max(read, sizes[end])
                    break
        cacheable = [point for point in breakpoints if sizes[point] >= MIN_TOKENS]
        self.entries.update(digests[point] for point in cacheable)
        write = max(0, sizes[cacheable[-1]] - read) if cacheable else 0
        usage = Usage(size - read - write, read, write)
        self.counters.usages.append(usage)
        return usage


# --- automatic: longest shared prefix --------------------------------------------------------


def openai_prompt(body: dict[str, Any]) -> bytes:
    """A chat body's prompt as the model reads it: tools first, then the messages."""
    return orjson.dumps(body.get("tools") or []) + b"".join(
        orjson.dumps(message) for message in body.get("messages") or ()
    )


def gemini_prompt(body: dict[str, Any]) -> bytes:
    parts = [body.get("tools") or [], body.get("systemInstruction") or {}]
    return b"".join(orjson.dumps(part) for part in parts) + b"".join(
        orjson.dumps(content) for content in body.get("contents") or ()
    )


def _shared(one: bytes, other: bytes) -> int:
    limit = min(len(one), len(other))
    low, high = 0, limit  # binary search on the common prefix length
    while low < high:
        middle = (low + high + 1) // 2
        if one[:middle] == other[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class AutomaticCache:
    """OpenAI's or Gemini's implicit cache: `serve(prompt)` -> Usage (writes are not billed
    apart, so `write` is always 0)."""

    prompts: list[bytes] = field(default_factory=list)
    counters: Counters = field(default_factory=Counters)

    def serve(self, prompt: bytes) -> Usage:
        shared = max((_shared(prompt, earlier) for earlier in self.prompts), default=0)
        self.prompts.append(prompt)
        shared_tokens = shared // CHARS_PER_TOKEN
        read = 0
        if shared_tokens >= MIN_TOKENS:
            read = MIN_TOKENS + (shared_tokens - MIN_TOKENS) // STEP * STEP
        total = tokens(prompt)
        usage = Usage(total - read, read, 0)
        self.counters.usages.append(usage)
        return usage


# --- usage in each provider's fields --------------------------------------------------------


def anthropic_usage(usage: Usage, output: int = 10) -> dict[str, int]:
    return {
        "input_tokens": usage.uncached,
        "cache_read_input_tokens": usage.read,
        "cache_creation_input_tokens": usage.write,
        "output_tokens": output,
    }


def bedrock_usage(usage: Usage, output: int = 10) -> dict[str, int]:
    return {
        "inputTokens": usage.uncached,
        "outputTokens": output,
        "totalTokens": usage.total + output,
        "cacheReadInputTokens": usage.read,
        "cacheWriteInputTokens": usage.write,
    }


def openai_usage(usage: Usage, output: int = 10) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.total,
        "completion_tokens": output,
        "total_tokens": usage.total + output,
        "prompt_tokens_details": {"cached_tokens": usage.read},
    }


def gemini_usage(usage: Usage, output: int = 10) -> dict[str, int]:
    return {
        "promptTokenCount": usage.total,
        "candidatesTokenCount": output,
        "totalTokenCount": usage.total + output,
        "cachedContentTokenCount": usage.read,
    }


# --- plugged into the scripted mocks (mock_upstream.MockUpstream.cache) ---------------------


class CachedUsage:
    """`upstream.cache = CachedUsage("anthropic")` on a MockUpstream (MockAnthropic, MockGemini,
    the OpenAI one, MockBedrock): each scripted 200 answer's usage is replaced by what this
    kind's cache gives the request. Answers: JSON, and SSE frames of dicts (Bedrock's binary
    eventstream frames are left as scripted)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.cache: ExplicitCache | AutomaticCache = (
            ExplicitCache(kind) if kind in ("anthropic", "bedrock") else AutomaticCache()
        )

    @property
    def counters(self) -> Counters:
        return self.cache.counters

    def __call__(self, body: Any, reply: Any) -> Any:
        if reply.status != 200 or not isinstance(body, dict):
            return reply
        usage = self._usage(body)
        if reply.frames is None:
            return replace(reply, json=self._with_usage(reply.json, usage))
        frames = [
            replace(frame, data=self._with_usage(frame.data, usage))
            if isinstance(frame.data, dict)
            else frame
            for frame in reply.frames
        ]
        return replace(reply, frames=frames)

    def _usage(self, body: dict[str, Any]) -> Usage:
        if isinstance(self.cache, ExplicitCache):
            return self.cache.serve(body)
        prompt = openai_prompt(body) if self.kind == "openai" else gemini_prompt(body)
        return self.cache.serve(prompt)

    def _with_usage(self, answer: Any, usage: Usage) -> Any:
        if not isinstance(answer, dict):
            return answer
        if self.kind == "anthropic":
            return _anthropic_answer(answer, usage)
        if self.kind == "bedrock" and "usage" in answer:
            return {**answer, "usage": bedrock_usage(usage, answer["usage"]["outputTokens"])}
        if self.kind == "openai" and answer.get("usage"):
            output = answer["usage"].get("completion_tokens", 10)
            return {**answer, "usage": openai_usage(usage, output)}
        if self.kind == "gemini" and "usageMetadata" in answer:
            output = answer["usageMetadata"].get("candidatesTokenCount", 10)
            return {**answer, "usageMetadata": gemini_usage(usage, output)}
        return answer


def _anthropic_answer(answer: dict[str, Any], usage: Usage) -> dict[str, Any]:
    """A message, or a stream's message_start, with the cache's usage."""
    if answer.get("type") == "message_start":
        message = answer["message"]
        fields = anthropic_usage(usage, message.get("usage", {}).get("output_tokens", 1))
        return {**answer, "message": {**message, "usage": fields}}
    if "usage" in answer and answer.get("type") == "message":
        return {**answer, "usage": anthropic_usage(usage, answer["usage"]["output_tokens"])}
    return answer
