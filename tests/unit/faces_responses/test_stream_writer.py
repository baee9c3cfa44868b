"""The Responses stream writer against the non-stream answer it must equal: a refusal streams
as its own message item (refusal part, `response.refusal.delta`s), and `response.completed`
carries the same output the non-stream call builds from the folded chat answer."""

from __future__ import annotations

from typing import Any

from app.faces.responses.output import ItemIds, output_items, response_shell
from app.faces.responses.stream import ResponsesStreamWriter
from app.faces.responses.tools import ToolNames
from app.translators.chunks import ChunkBuilder

BUILDER = ChunkBuilder("chatcmpl-writer", 1700000000, "m")
SHELL = response_shell({"model": "m", "input": "hi"}, resp_id="resp_w", created=1, model="m")


def without_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in item.items() if key != "id"} for item in items]


def test_a_refusal_streams_as_its_own_message_and_equals_the_non_stream_output() -> None:
    writer = ResponsesStreamWriter(SHELL, ItemIds("w"), ToolNames(), show_encrypted=False)
    chunks = [
        BUILDER.content("Let me see. "),
        BUILDER.chunk({"refusal": "I can't "}),
        BUILDER.chunk({"refusal": "help with that."}),
        BUILDER.finish("stop"),
    ]
    events = writer.feed(chunks) + writer.finish()
    kinds = [event["type"] for event in events]
    assert kinds.count("response.output_item.added") == 2
    assert [e["delta"] for e in events if e["type"] == "response.refusal.delta"] == [
        "I can't ",
        "help with that.",
    ]
    (done,) = [e for e in events if e["type"] == "response.refusal.done"]
    assert done["refusal"] == "I can't help with that."
    streamed = events[-1]["response"]["output"]
    message = {"role": "assistant", "content": "Let me see. ", "refusal": "I can't help with that."}
    completion = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    whole = output_items(completion, ItemIds("n"), ToolNames())
    assert without_ids(streamed) == without_ids(whole)
    assert streamed[1]["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]
