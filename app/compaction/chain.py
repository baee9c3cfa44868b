"""What a compaction keeps of the conversation, pure: the user's own messages as they were
(`/v1/responses/compact` answers them before its `compaction` item, as OpenAI's does)."""

from __future__ import annotations

from typing import Any

from app.faces.responses.compaction import is_user_message


def kept_messages(items: list[Any]) -> list[dict[str, Any]]:
    """The user messages among `items`, each as it came (`type` added when it was left out:
    an output item names its type)."""
    return [{"type": "message", **item} for item in items if is_user_message(item)]
