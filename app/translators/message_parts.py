"""Pieces of OpenAI chat history that every translated kind reads the same way: the leading
system messages apart from the turns (later ones marked in place), the tool calls and results
checked as OpenAI checks them, the tools a history calls, a tool call's `arguments` string as
the JSON object upstreams need, a base64 data URL split in two, and same-role turns merged
(for the APIs whose roles must alternate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.errors import InvalidRequest
from app.json_depth import too_deep_at, value_too_deep
from app.openai_types import (
    AssistantMessage,
    FunctionMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    UserPart,
)

TurnMessage = UserMessage | AssistantMessage | ToolMessage
Turn = tuple[int, str, tuple[str, ...]]
"""(position, role, ids): an assistant message's call ids, a tool message's answered id."""


def split_system(
    messages: list[Message], kind: str
) -> tuple[list[str | list[TextPart]], list[tuple[int, TurnMessage]]]:
    """The leading system and developer contents (those before the first other message), in
    order, and the other messages with their positions (for error params). Neither Anthropic,
    Bedrock nor Gemini has a mid-conversation system turn; a later system message (Claude Code
    sends them, chat clients too) becomes a marked user turn where it stands (system_turn),
    so the prompt's start, and the provider's cache of it, stays the same when one appears.
    Legacy `function` messages are refused by name: only openai upstreams take them. The tool
    calls and results are checked here, so every translated kind refuses what OpenAI refuses
    before anything is sent."""
    system: list[str | list[TextPart]] = []
    turns: list[Turn] = []
    ordered: list[tuple[int, TurnMessage]] = []
    held: list[tuple[int, TurnMessage]] = []
    awaits_results = False  # the last turn is an assistant's calls or a tool result
    for position, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if not (ordered or held):
                system.append(message.content)
            elif (marked := system_turn(message)) is not None:
                held.append((position, marked))
            continue
        if isinstance(message, ToolMessage):
            turns.append((position, "tool", (message.tool_call_id,)))
        elif isinstance(message, AssistantMessage):
            ids = tuple(call.id for call in message.tool_calls) if message.tool_calls else ()
            turns.append((position, "assistant", ids))
        elif isinstance(message, FunctionMessage):
            raise InvalidRequest(
                f"legacy function messages are not supported for {kind} upstreams; use tools",
                param=f"messages[{position}]",
            )
        else:
            turns.append((position, "user", ()))
        role = turns[-1][1]
        if held and not (role == "tool" and awaits_results):
            # a system message held past tool results (which must follow their calls) goes now
            ordered += held
            held = []
        ordered.append((position, message))
        awaits_results = role == "tool" or bool(turns[-1][2])
    _refuse_unanswered(turns)
    return system, ordered + held


SYSTEM_OPEN, SYSTEM_CLOSE = "<system>", "</system>"


def system_turn(message: SystemMessage) -> UserMessage | None:
    """A mid-conversation system message as a user turn, its text between `<system>` tags (as
    Claude Code marks its own reminders in user turns): the model still reads it as the
    system's word, and nothing before it changes. Its parts keep their other fields; blank
    ones are left out, and a blank message is None (as a blank leading one is dropped)."""
    content = message.content
    if isinstance(content, str):
        if not content.strip():
            return None
        return UserMessage(role="user", content=SYSTEM_OPEN + content + SYSTEM_CLOSE)
    texts = [part for part in content if part.text.strip()]
    if not texts:
        return None
    texts[0] = texts[0].model_copy(update={"text": SYSTEM_OPEN + texts[0].text})
    texts[-1] = texts[-1].model_copy(update={"text": texts[-1].text + SYSTEM_CLOSE})
    parts: list[UserPart] = [*texts]
    return UserMessage(role="user", content=parts)


UNANSWERED_CALLS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
RESULT_FOR_NO_CALL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)


@dataclass(frozen=True, slots=True)
class ToolAnswerFault:
    """What check_tool_answers refuses: the calls of the message at `position` left without
    results (`ids`), or (`unanswered` False) the tool message there answering no call."""

    unanswered: bool
    position: int
    ids: tuple[str, ...]


def _refuse_unanswered(turns: list[Turn]) -> None:
    """Every call of an assistant turn answered by the tool messages right after it, and every
    tool message answering a call of that turn: OpenAI refuses anything else, in these words,
    and so do Claude, Gemini and Bedrock, in theirs (or worse, after billing the attempt)."""
    fault = tool_answer_fault(turns)
    if fault is not None and fault.unanswered:
        param = f"messages.[{fault.position}].role"
        raise InvalidRequest(UNANSWERED_CALLS + ", ".join(fault.ids), param=param)
    if fault is not None:
        raise InvalidRequest(RESULT_FOR_NO_CALL, param=f"messages.[{fault.position}].role")


def tool_answer_fault(turns: list[Turn]) -> ToolAnswerFault | None:
    """The first fault check_tool_answers refuses (each face words it in its own API's terms).

    System and developer messages are not in `turns` (they are hoisted), and consecutive
    assistant messages count as one turn (every translated kind merges them): so a history our
    Responses and Messages faces build from their items is never refused for its layout."""
    calls: dict[str, int] = {}  # the current assistant turn's call ids -> message positions
    unanswered: dict[str, int] = {}
    previous = None
    for position, role, ids in turns:
        if role == "tool":
            if ids[0] not in calls:
                return ToolAnswerFault(False, position, ids)
            unanswered.pop(ids[0], None)
        elif role != "assistant" or previous != "assistant":
            if unanswered:
                return _unanswered(unanswered)
            calls.clear()
        if role == "assistant":
            for call_id in ids:
                calls[call_id] = unanswered[call_id] = position
        previous = role
    return _unanswered(unanswered) if unanswered else None


def _unanswered(unanswered: dict[str, int]) -> ToolAnswerFault:
    """OpenAI names the first assistant message with an unanswered call, and lists that
    message's unanswered ids."""
    position = min(unanswered.values())
    return ToolAnswerFault(
        True, position, tuple(i for i, at in unanswered.items() if at == position)
    )


HISTORY_TOOL_SCHEMA: dict[str, Any] = {"type": "object"}
"""The input schema declared for a tool the history calls but the request does not define:
Claude ("Requests which include `tool_use` or `tool_result` blocks must define tools") and
Converse (LiteLLM #24158) refuse tool blocks without tools."""


def called_tool_names(messages: list[Message]) -> list[str]:
    """The names the history's tool calls use, each once, in order: the tools to declare (with
    HISTORY_TOOL_SCHEMA) when a client sends such a history without `tools`."""
    called = {
        call.function.name: None
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls or ()
    }
    return list(called)


_JSON_TYPE_NAMES = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def arguments_object(call: ToolCall, param: str, kind: str) -> dict[str, Any]:
    """`function.arguments` (a JSON string) -> the object Anthropic's `tool_use.input` and
    Gemini's `functionCall.args` must be (F.8).

    PROTOCOLS suggests wrapping bad arguments; we refuse instead, naming the call, because a
    wrapped value replays a call the model never made.
    """
    arguments = call.function.arguments
    if not arguments.strip():
        return {}  # a parameterless call: OpenAI clients send "" as often as "{}"
    try:
        loaded = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        raise InvalidRequest(
            f"tool call '{call.id}' has arguments that are not valid JSON ({param})",
            param=param,
        ) from None
    if not isinstance(loaded, dict):
        json_type = _JSON_TYPE_NAMES.get(type(loaded), "a number")
        raise InvalidRequest(
            f"tool call '{call.id}' has arguments that are {json_type}, not a JSON object "
            f"({param}); {kind} upstreams need tool call arguments to be an object",
            param=param,
        )
    if value_too_deep(loaded, arguments):
        # JSON the edge's byte count could not see (brackets written as \u escapes); the edge
        # counts it where it stands, this only where orjson could no longer serialise it.
        raise too_deep_at(param)
    return loaded


def split_data_url(url: str, param: str, kind: str) -> tuple[str, str]:
    """`data:<mime>[;params];base64,<data>` -> (lower-case media type, base64 data)."""
    header, comma, data = url[5:].partition(",")
    if url[:5].lower() != "data:" or not comma or not header.lower().endswith(";base64"):
        raise InvalidRequest(f"data URLs for {kind} upstreams must be base64", param=param)
    return header.partition(";")[0].strip().lower(), data


def append_turn(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Consecutive same-role messages merge into one turn so roles alternate (Anthropic's and
    Bedrock's rule; it is what puts parallel tool results in one user turn); an empty message
    is dropped, which can make its neighbours consecutive and merge them too."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})
