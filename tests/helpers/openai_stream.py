"""One checker for every stream the proxy emits: the contract's chunk invariants, and a fold of
the chunks into the non-stream answer they must equal."""

from __future__ import annotations

import json
from typing import Any

import orjson

from tests.conformance.spec import check_chat_chunk, check_chat_completion, maybe

FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter", "function_call"}


def parse_sse_body(body: bytes) -> tuple[list[dict[str, Any]], bool]:
    """A client's view of an SSE body: the JSON chunks, and whether `[DONE]` ended it.

    Strict on framing: every event is `data: ...` followed by a blank line.
    """
    chunks: list[dict[str, Any]] = []
    done = False
    assert body.endswith(b"\n\n"), f"stream does not end with a blank line: {body[-80:]!r}"
    for frame in body.split(b"\n\n")[:-1]:
        assert frame.startswith(b"data: "), f"unexpected frame {frame[:80]!r}"
        payload = frame[len(b"data: ") :]
        assert not done, "data after [DONE]"
        if payload == b"[DONE]":
            done = True
            continue
        chunk = orjson.loads(payload)
        maybe(check_chat_chunk, chunk)  # OpenAI's own schema (tests/conformance)
        chunks.append(chunk)
    return chunks, done


def assert_openai_stream(
    chunks: list[dict[str, Any]], *, include_usage: bool, done: bool = True
) -> None:
    """Every invariant CONTRACT.md states for a streamed answer."""
    assert done, "stream did not end with data: [DONE]"
    assert chunks, "no chunks"
    assert not any("error" in c for c in chunks), f"error event in stream: {chunks}"
    first = chunks[0]
    for chunk in chunks:
        maybe(check_chat_chunk, chunk)
        assert chunk["object"] == "chat.completion.chunk"
        assert (chunk["id"], chunk["created"], chunk["model"]) == (
            first["id"],
            first["created"],
            first["model"],
        ), "id/created/model differ between chunks"
    usage_chunks = [c for c in chunks if not c["choices"]]
    choice_chunks = [c for c in chunks if c["choices"]]
    if include_usage:
        assert len(usage_chunks) == 1, "expected exactly one usage chunk"
        assert chunks[-1] is usage_chunks[0], "usage chunk must be the last before [DONE]"
        usage = chunks[-1]["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    else:
        assert not usage_chunks, "a choices: [] chunk was sent without include_usage"
    assert choice_chunks[0]["choices"][0]["delta"].get("role") == "assistant"
    _check_choice_deltas(choice_chunks)


def _check_choice_deltas(chunks: list[dict[str, Any]]) -> None:
    finishes = [c for c in chunks if c["choices"][0].get("finish_reason") is not None]
    assert len(finishes) == 1, f"expected one finish_reason, got {len(finishes)}"
    assert finishes[0] is chunks[-1], "finish_reason must be on the last choice chunk"
    started: dict[int, dict[str, str]] = {}
    for position, chunk in enumerate(chunks):
        (choice,) = chunk["choices"]
        assert choice["index"] == 0
        assert "delta" in choice
        assert chunk.get("usage") is None, "usage on a choice chunk resets the SDK's snapshot"
        delta = choice["delta"]
        assert position == 0 or "role" not in delta, f"role repeated: {chunk}"
        assert "reasoning" not in delta, "reasoning goes out as reasoning_content"
        if "tool_calls" in delta:
            assert delta["tool_calls"], "an empty tool_calls list in a delta"
        for delta_call in delta.get("tool_calls") or []:
            _check_tool_delta(delta_call, started, chunk)
    assert sorted(started) == list(range(len(started))), "tool call indexes must be 0..n-1"
    for call in started.values():
        json.loads(call["arguments"])  # fragments concatenate to valid JSON
    reason = finishes[0]["choices"][0]["finish_reason"]
    assert reason in FINISH_REASONS
    if started:
        assert reason == "tool_calls", (
            "tool calls were streamed but finish_reason is not tool_calls"
        )


def _check_tool_delta(
    delta_call: dict[str, Any], started: dict[int, dict[str, str]], chunk: dict[str, Any]
) -> None:
    index = delta_call["index"]
    assert isinstance(index, int)
    assert isinstance(delta_call.get("function"), dict), "every tool-call delta needs function"
    indexes = [c["index"] for c in chunk["choices"][0]["delta"]["tool_calls"]]
    assert len(indexes) == len(set(indexes)), "duplicate index inside one chunk"
    if index not in started:
        assert delta_call.get("id"), "first delta of a call must carry its id"
        assert delta_call.get("type") == "function"
        assert delta_call["function"].get("name"), "first delta of a call must carry its name"
        assert delta_call["function"].get("arguments") == "", "arguments follow the first delta"
        assert index == len(started), "tool call indexes must appear in order"
        started[index] = {"arguments": ""}
        return
    assert not {"id", "type"} & set(delta_call), f"later delta repeats fields: {delta_call}"
    assert set(delta_call["function"]) == {"arguments"}, f"later delta repeats name: {delta_call}"
    assert isinstance(delta_call["function"]["arguments"], str), "arguments are JSON text"
    started[index]["arguments"] += delta_call["function"]["arguments"]


def assert_openai_completion(completion: dict[str, Any]) -> None:
    """Every invariant CONTRACT.md states for a non-stream answer, and OpenAI's schema."""
    maybe(check_chat_completion, completion)
    assert completion["object"] == "chat.completion"
    for choice in completion["choices"]:
        message = choice["message"]
        assert message["role"] == "assistant"
        assert "reasoning" not in message, "reasoning goes out as reasoning_content"
        calls = message.get("tool_calls")
        assert calls is None or calls, "an empty tool_calls list"
        ids = [call["id"] for call in calls or ()]
        assert len(ids) == len(set(ids)), f"a call is listed twice: {ids}"
        for call in calls or ():
            assert call["id"]
            assert call["type"] == "function"
            assert call["function"]["name"]
            assert isinstance(call["function"]["arguments"], str), "arguments are JSON text"
            json.loads(call["function"]["arguments"])
        if calls:
            assert message["content"] != "", "content is null when the model only called tools"
        assert choice["finish_reason"] in FINISH_REASONS
        assert (choice["finish_reason"] == "tool_calls") == bool(calls) or choice[
            "finish_reason"
        ] in {"length", "content_filter"}
    usage = completion.get("usage")
    if usage is not None:
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def fold_stream(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-stream answer a stream stands for, for comparison with the real one (with
    `refusal` and `logprobs` null, as a non-stream answer must carry them). The chunks are
    checked against OpenAI's schema on the way."""
    texts: dict[str, str] = {}
    calls: dict[int, dict[str, Any]] = {}
    thinking_blocks: dict[int, dict[str, Any]] = {}
    finish_reason = None
    usage = None
    for chunk in chunks:
        maybe(check_chat_chunk, chunk)
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            delta = choice["delta"]
            for key in ("content", "reasoning_content"):
                if delta.get(key):
                    texts[key] = texts.get(key, "") + delta[key]
            for part in delta.get("tool_calls") or []:
                _fold_tool_delta(calls, part)
            _fold_thinking_blocks(thinking_blocks, delta.get("thinking_blocks") or [])
            finish_reason = choice.get("finish_reason") or finish_reason
    message: dict[str, Any] = {
        "role": "assistant",
        "content": texts.get("content"),
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if "reasoning_content" in texts:
        message["reasoning_content"] = texts["reasoning_content"]
    if thinking_blocks:
        assert sorted(thinking_blocks) == list(range(len(thinking_blocks)))
        message["thinking_blocks"] = [thinking_blocks[i] for i in sorted(thinking_blocks)]
    first = chunks[0]
    folded: dict[str, Any] = {
        "id": first["id"],
        "object": "chat.completion",
        "created": first["created"],
        "model": first["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
    }
    if usage is not None:
        folded["usage"] = usage
    return folded


def _fold_thinking_blocks(folded: dict[int, dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        assert block["index"] not in folded, "a thinking block is sent whole, once"
        folded[block["index"]] = {key: value for key, value in block.items() if key != "index"}


def _fold_tool_delta(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    call = calls.setdefault(part["index"], {"id": part.get("id"), "type": "function"})
    function = call.setdefault("function", {"arguments": ""})
    if "name" in part["function"]:
        function["name"] = part["function"]["name"]
    function["arguments"] += part["function"].get("arguments", "")
