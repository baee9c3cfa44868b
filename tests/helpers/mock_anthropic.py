"""A local Anthropic on 127.0.0.1: the scripted MockUpstream, screening every request the way
the Messages API does (the key and version headers, anthropic_rules for the history,
anthropic_output_rules for output_config.format and tool names, thinking_rules for extended
thinking) and answering Anthropic's own error when it fails. It
remembers the thinking its scripted answers hand out, so a later request that drops, edits or
invents a thinking block is refused as Anthropic would. Also builders for thinking answers,
whole and as stream events."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tests.helpers.anthropic_output_rules import output_problems
from tests.helpers.anthropic_rules import request_problems
from tests.helpers.mock_upstream import ANTHROPIC_PATH, Exchange, MockUpstream, Reply
from tests.helpers.thinking_rules import thinking_problems

MODEL = "claude-sonnet-4-5"
PATHS = (ANTHROPIC_PATH, ANTHROPIC_PATH + "/count_tokens")
USAGE = {"input_tokens": 120, "output_tokens": 64}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class MockAnthropic(MockUpstream):
    """`with MockAnthropic(api_key) as anthropic: anthropic.answer(Reply(...), stream=...)`."""

    def __init__(self, api_key: str) -> None:
        super().__init__(screen=self._screen)
        self.api_key = api_key
        self.issued: dict[str, str] = {}

    def answer(self, reply: Reply, path: str = ANTHROPIC_PATH) -> None:
        """Queues `reply` for the next request to `path` (with its query, if it has one)."""
        self.issued.update(issued_thinking(reply))
        self.add(reply, path)

    def reset(self) -> None:
        super().reset()
        self.issued.clear()

    def _screen(self, exchange: Exchange) -> Reply | None:
        if exchange.method != "POST" or exchange.path.split("?")[0] not in PATHS:
            return Reply(404, json=anthropic_error("not_found_error", "Not Found"))
        if exchange.headers.get("x-api-key") != self.api_key:
            return Reply(401, json=anthropic_error("authentication_error", "invalid x-api-key"))
        if not exchange.headers.get("anthropic-version"):
            message = "anthropic-version: header is required"
            return Reply(400, json=anthropic_error("invalid_request_error", message))
        body = exchange.body if isinstance(exchange.body, dict) else {}
        problems = request_problems(body) + output_problems(body)
        problems += thinking_problems(body, self.issued)
        if problems:
            return Reply(400, json=anthropic_error("invalid_request_error", problems[0]))
        return None


def sign(thinking: str) -> str:
    """A signature that stands for `thinking` (base64, like Anthropic's opaque ones)."""
    return base64.b64encode(b"sig:" + hashlib.sha256(thinking.encode()).digest()).decode()


def issued_thinking(reply: Reply) -> dict[str, str]:
    """Signature (or redacted data) -> the thinking it signs, from a scripted answer, whole or
    streamed (a streamed block's text is the sum of its thinking_delta events)."""
    if reply.frames is None:
        blocks = (reply.json or {}).get("content", []) if isinstance(reply.json, dict) else []
    else:
        blocks = streamed_blocks([frame.data for frame in reply.frames])
    issued = {}
    for block in blocks:
        if block.get("type") == "thinking":
            issued[block["signature"]] = block["thinking"]
        elif block.get("type") == "redacted_thinking":
            issued[block["data"]] = ""
    return issued


def streamed_blocks(events: list[Any]) -> list[dict[str, Any]]:
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("type") == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event.get("type") == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    return [blocks[index] for index in sorted(blocks)]


# --- scripted answers -------------------------------------------------------------------------


def thinking_block(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": sign(thinking)}


def message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_01ThinkingMock" + hashlib.sha256(json.dumps(content).encode()).hexdigest()[:8],
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": USAGE,
    }


def thinking_tool_message(
    thinking: str, calls: list[tuple[str, str, dict[str, Any]]]
) -> dict[str, Any]:
    """Thinking, then one tool_use per (id, name, input)."""
    uses = [{"type": "tool_use", "id": i, "name": n, "input": args} for i, n, args in calls]
    return message([thinking_block(thinking), *uses], "tool_use")


def thinking_text_message(
    thinking: str, text: str, *, with_thinking: bool = True
) -> dict[str, Any]:
    """Thinking (unless `with_thinking` is False), then the text answer."""
    blocks = [thinking_block(thinking)] if with_thinking else []
    return message([*blocks, {"type": "text", "text": text}], "end_turn")


def message_events(whole: dict[str, Any]) -> list[dict[str, Any]]:
    """`whole` as Anthropic streams it (PROTOCOLS B.5): text and thinking in two deltas each,
    the signature in its own delta before the block stops, tool input in two fragments."""
    start = whole | {
        "content": [],
        "stop_reason": None,
        "usage": {**whole["usage"], "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(whole["content"]):
        events += block_events(index, block)
    stop = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": whole["usage"]["output_tokens"]}
    events += [{"type": "message_delta", "delta": stop, "usage": usage}, {"type": "message_stop"}]
    return events


def block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "thinking":
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": part} for part in _halves(block["thinking"])
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": part} for part in _halves(block["text"])]
    elif kind == "tool_use":
        opening = block | {"input": {}}
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _halves(arguments)]
    else:  # redacted_thinking arrives whole
        opening, deltas = block, []
    return [
        {"type": "content_block_start", "index": index, "content_block": opening},
        *({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def _halves(text: str) -> tuple[str, str]:
    half = len(text) // 2
    return text[:half], text[half:]
