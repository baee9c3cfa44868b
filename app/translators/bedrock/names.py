"""Tool names and tool-use ids Bedrock accepts (PROTOCOLS H.1: names `[a-zA-Z0-9_-]{1,64}`,
ids `[a-zA-Z0-9_.:-]{1,64}`), mapped so the client only ever sees its own.

Tool definitions reach us already checked against the name pattern (app/openai_types.py), but
a history's calls and a named `tool_choice` are not: a conversation that began on another
upstream may hold `functions.get_weather` or a name past 64 characters. Such a name is sent as
its safe characters plus a hash of the original, and the map is rebuilt from the request when
the answer comes back (no state is kept between the two), so both sides agree.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

from app.openai_types import AssistantMessage, ChatRequest, NamedToolChoice

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
_TOOL_USE_ID_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_.:-]")
_HASH_LENGTH = 12
_MAX = 64


class ToolNames:
    """Client name <-> Bedrock name, for the names that had to change (usually none)."""

    __slots__ = ("_to_bedrock", "_to_client")

    def __init__(self, to_bedrock: dict[str, str]) -> None:
        self._to_bedrock = to_bedrock
        self._to_client = {bedrock: client for client, bedrock in to_bedrock.items()}

    def bedrock(self, name: str) -> str:
        return self._to_bedrock.get(name, name)

    def client(self, name: str) -> str:
        return self._to_client.get(name, name)


NO_RENAMES = ToolNames({})


def tool_names(request: ChatRequest) -> ToolNames:
    """The map for one request: every name it uses, in order, so the request and its answer
    derive the same one. A replacement never equals a name the request uses as it is, nor
    another replacement (a counter is folded into the hash until it is free)."""
    names = list(dict.fromkeys(_request_names(request)))
    invalid = [name for name in names if not _NAME.fullmatch(name)]
    if not invalid:
        return NO_RENAMES
    taken = {name for name in names if _NAME.fullmatch(name)}
    to_bedrock: dict[str, str] = {}
    for name in invalid:
        replacement = _replacement(name, taken)
        taken.add(replacement)
        to_bedrock[name] = replacement
    return ToolNames(to_bedrock)


def _request_names(request: ChatRequest) -> Iterator[str]:
    for tool in request.tools or ():
        yield tool.function.name
    if isinstance(request.tool_choice, NamedToolChoice):
        yield request.tool_choice.function.name
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or ():
                yield call.function.name


def _replacement(name: str, taken: set[str]) -> str:
    safe = _NAME_BAD_CHARS.sub("_", name)[: _MAX - _HASH_LENGTH - 1]
    attempt = 0
    while True:
        salt = f"{attempt}:" if attempt else ""
        digest = hashlib.sha256(f"{salt}{name}".encode()).hexdigest()[:_HASH_LENGTH]
        candidate = f"{safe}_{digest}"
        if candidate not in taken:
            return candidate
        attempt += 1


def bedrock_tool_id(openai_id: str) -> str:
    """A toolUseId Bedrock accepts. Rewritten the same way wherever it appears (the call and
    its result), the hash keeping apart ids that differ only in replaced or cut characters;
    a valid id is left as it is."""
    if _TOOL_USE_ID.fullmatch(openai_id):
        return openai_id
    digest = hashlib.sha256(openai_id.encode()).hexdigest()[:_HASH_LENGTH]
    safe = _TOOL_USE_ID_BAD_CHARS.sub("_", openai_id)[: _MAX - _HASH_LENGTH - 1]
    return f"{safe}_{digest}"
