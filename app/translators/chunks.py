"""ChunkBuilder: the only code that shapes `chat.completion.chunk` dicts, plus the matching
non-stream completion and usage shapes, so every translator emits one strict dialect."""

from __future__ import annotations

from typing import Any, cast

from app.openai_types import (
    ChatCompletion,
    FinishReason,
    PromptTokensDetails,
    ResponseMessage,
    ToolCallOut,
    Usage,
)
from app.translators.base import Chunk


class ChunkBuilder:
    """Shapes the chunks of one streamed response: same id, created and model on every one."""

    __slots__ = ("created", "id", "model")

    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self.id = completion_id
        self.created = created
        self.model = model

    def chunk(self, delta: dict[str, Any], finish_reason: FinishReason | None = None) -> Chunk:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    def role(self) -> Chunk:
        """The first chunk: the OpenAI Node SDK's stream helper fails without the role."""
        return self.chunk({"role": "assistant", "content": ""})

    def content(self, text: str) -> Chunk:
        return self.chunk({"content": text})

    def reasoning(self, text: str) -> Chunk:
        """Model thinking, under the `reasoning_content` name OpenAI-compatible clients read."""
        return self.chunk({"reasoning_content": text})

    def thinking_block(self, index: int, block: dict[str, Any]) -> Chunk:
        """One whole Anthropic thinking block, once it has ended. `index` is its place among
        the answer's blocks: the OpenAI SDK's stream accumulator merges list deltas by it and
        raises on a second entry without one."""
        return self.chunk({"thinking_blocks": [{"index": index, **block}]})

    def tool_call_start(self, index: int, call_id: str, name: str) -> Chunk:
        """A call's first delta: the only one that carries id, type and name."""
        function = {"name": name, "arguments": ""}
        call = {"index": index, "id": call_id, "type": "function", "function": function}
        return self.chunk({"tool_calls": [call]})

    def tool_call_arguments(self, index: int, fragment: str) -> Chunk:
        return self.chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})

    def finish(self, reason: FinishReason) -> Chunk:
        return self.chunk({}, reason)

    def usage(self, usage: Usage) -> Chunk:
        """The usage chunk: sent last, and only when the client asked with include_usage."""
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
        }


def make_usage(
    prompt_tokens: int,
    completion_tokens: int,
    *,
    cached_tokens: int | None = None,
    reasoning_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> Usage:
    """OpenAI's usage. `cached_tokens` (reads) and `cache_write_tokens` (writes, which
    Anthropic and Bedrock bill above input) are both part of `prompt_tokens`; each is
    given only when the upstream reports it."""
    usage: Usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None or cache_write_tokens is not None:
        details: dict[str, int] = {}
        if cached_tokens is not None:
            details["cached_tokens"] = cached_tokens
        if cache_write_tokens is not None:
            details["cache_write_tokens"] = cache_write_tokens
        # OpenAI's spec has cache_write_tokens; app/openai_types.py's TypedDict does not yet.
        usage["prompt_tokens_details"] = cast(PromptTokensDetails, details)
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return usage


def make_completion(
    builder: ChunkBuilder,
    *,
    content: str | None,
    tool_calls: list[ToolCallOut],
    finish_reason: FinishReason,
    usage: Usage | None,
    reasoning: str | None = None,
) -> ChatCompletion:
    """A non-stream answer. `content` is None (not "") when the model only called tools.
    `refusal` and `logprobs` are null, never absent: OpenAI's spec requires both (nullable)
    and clients generated from it reject an answer without them."""
    message: ResponseMessage = {"role": "assistant", "content": content or None, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning_content"] = reasoning
    completion: ChatCompletion = {
        "id": builder.id,
        "object": "chat.completion",
        "created": builder.created,
        "model": builder.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
    }
    if usage is not None:
        completion["usage"] = usage
    return completion


def tool_call(call_id: str, name: str, arguments: str) -> ToolCallOut:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
