"""The compaction item shapes: `compaction_trigger` (the client asks for a summary) and the
`compaction` item ToolRelay answers with, whose `encrypted_content` carries the summary.

The content is opaque to the client but not secret (it is the client's own conversation,
summarised): a version prefix and base64 of JSON, so any replica reads it with no shared state,
and a string that is not ours (OpenAI's own encrypted compaction) is told apart and refused by
the caller rather than sent on as if it were a summary.

When a `compaction` item comes back it becomes one `user` message holding the summary, in the
item's place. A user message, not a system or developer one: Anthropic and Gemini have no
mid-conversation system turn (their translators lift such messages into the system prompt,
which would move the summary out of its place and change the cached prefix of every later
request), while a user turn is where every kind's model expects context the client gives it,
and it is what Codex's own local compaction sends."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

PREFIX = "trc1:"
TRIGGER = "compaction_trigger"
ITEM = "compaction"
SUMMARY_HEADING = (
    "Summary of the conversation so far (earlier turns were compacted into it; carry on from "
    "it):\n\n"
)


def compaction_content(summary: str) -> str:
    return PREFIX + base64.b64encode(orjson.dumps({"summary": summary})).decode()


def summary_of(content: Any) -> str | None:
    """The summary inside one of our `encrypted_content` strings; None for anything else."""
    if not isinstance(content, str) or not content.startswith(PREFIX):
        return None
    try:
        decoded = orjson.loads(base64.b64decode(content[len(PREFIX) :], validate=True))
    except (binascii.Error, orjson.JSONDecodeError, ValueError):
        return None
    summary = decoded.get("summary") if isinstance(decoded, dict) else None
    return summary if isinstance(summary, str) else None


def compaction_item(item_id: str, summary: str) -> dict[str, Any]:
    return {"type": ITEM, "id": item_id, "encrypted_content": compaction_content(summary)}


def summary_message(summary: str) -> dict[str, Any]:
    """The chat message a `compaction` item becomes."""
    return {"role": "user", "content": SUMMARY_HEADING + summary}


def is_trigger(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == TRIGGER


def ends_with_trigger(items: list[Any]) -> bool:
    return bool(items) and is_trigger(items[-1])


def is_user_message(item: Any) -> bool:
    """A user's own message (a plain `{role, content}` counts: `type` defaults to message)."""
    return (
        isinstance(item, dict)
        and item.get("type", "message") == "message"
        and item.get("role") == "user"
    )


def compacted(history: list[Any]) -> list[Any]:
    """A stored conversation as its next turn sees it: when a response in the chain answered a
    `compaction_trigger`, what came before that trigger is left out except the user's own
    messages (the summary stands for the rest), and the trigger itself goes."""
    last = max((i for i, item in enumerate(history) if is_trigger(item)), default=None)
    if last is None:
        return history
    return [item for item in history[:last] if is_user_message(item)] + history[last + 1 :]
