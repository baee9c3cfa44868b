"""OpenAI chat messages -> Converse `system` blocks and alternating `messages` turns
(PROTOCOLS H.1).

Converse is strict where OpenAI is lenient, and each rule here meets one of its refusals
without changing what the conversation says: every content block has exactly one key; blank
text blocks are refused (LiteLLM #7169); all tool results answering one assistant turn go in
ONE user message, first in it (LiteLLM #5277, Bifrost #1164); `toolUse.input` is an object,
`{}` for empty arguments; `toolResult.json` must be an object, so any other JSON goes as text;
names and ids follow patterns (names.py). What cannot be sent is a 400 naming the part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.errors import InvalidRequest
from app.openai_types import (
    AssistantMessage,
    ImagePart,
    Message,
    RefusalPart,
    TextPart,
    ToolMessage,
    UserMessage,
)
from app.translators.anthropic.thinking import replay_blocks
from app.translators.bedrock.names import ToolNames, bedrock_tool_id
from app.translators.message_parts import (
    TurnMessage,
    append_turn,
    arguments_object,
    split_data_url,
    split_system,
)
from app.translators.prompt_cache import (
    control_of,
    system_controls,
    ttl_of,
    without_billing_line,
)

Block = dict[str, Any]
Turn = dict[str, Any]

KIND = "bedrock"
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_CACHE_TTLS = frozenset({"5m", "1h"})  # botocore: CacheTTL


@dataclass(frozen=True, slots=True)
class Conversation:
    system: list[Block]
    messages: list[Turn]
    tool_blocks: bool
    """The history holds toolUse or toolResult blocks: Converse then needs a toolConfig."""
    warning: str | None = None
    """What was sent other than as asked (a user turn put before a leading assistant one)."""


def convert_messages(messages: list[Message], names: ToolNames, *, thinking: bool) -> Conversation:
    """The leading system and developer messages as `system`, in order (Converse has no
    mid-conversation system turn: later ones stay in place as marked user turns, split_system,
    so the cached prefix holds), the rest as turns. Thinking blocks are replayed only with
    thinking on, as for anthropic: Claude refuses them in a final assistant turn otherwise.
    Claude Code's billing line is left out of the system text (prompt_cache.py)."""
    system_contents, conversation = split_system(messages, KIND)
    system: list[Block] = []
    for content, control in zip(system_contents, system_controls(messages), strict=True):
        blocks = _text_blocks(content)
        system += [*blocks, *cache_point(control)] if blocks else []
    if system and "text" in system[0]:
        system[0]["text"] = without_billing_line(system[0]["text"])
        if not system[0]["text"].strip():
            del system[0]
    turns: list[Turn] = []
    tool_blocks = False
    for position, message in conversation:
        role, blocks = _convert(message, position, names, thinking)
        tool_blocks = tool_blocks or isinstance(message, ToolMessage) or _has_calls(message)
        append_turn(turns, role, blocks)
    if not turns:
        raise InvalidRequest(
            "bedrock upstreams need at least one message with non-empty content",
            param="messages",
        )
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda block: "toolResult" not in block)
    warning = _start_with_user(turns)
    _trim_prefill(turns)
    return Conversation(system, turns, tool_blocks, warning)


LEADING_USER_TEXT = "(the conversation starts with the assistant's turn below)"


def _start_with_user(turns: list[Turn]) -> str | None:
    """Converse refuses a conversation that does not start with a user turn ("A conversation
    must start with a user message"); chat UIs often open with the assistant's greeting. A
    short user turn saying so goes first, and the client is told (x-toolrelay-warning)."""
    if turns[0]["role"] == "user":
        return None
    turns.insert(0, {"role": "user", "content": [{"text": LEADING_USER_TEXT}]})
    return "bedrock needs a user turn first: one was added before the leading assistant turn"


def _has_calls(message: TurnMessage) -> bool:
    return isinstance(message, AssistantMessage) and bool(message.tool_calls)


def _convert(
    message: TurnMessage, position: int, names: ToolNames, thinking: bool
) -> tuple[str, list[Block]]:
    if isinstance(message, UserMessage):
        return "user", _user_blocks(message, position)
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message, position, names, thinking)
    result = _tool_result(message)
    content = message.content
    if not message.__pydantic_extra__ and content.__class__ is not list:
        return "user", [result]  # no breakpoint possible: the common case, kept cheap
    control = control_of(message)
    for part in content if control is None and isinstance(content, list) else ():
        if (control := control_of(part)) is not None:
            break
    return "user", [result, *cache_point(control)]


def _trim_prefill(turns: list[Turn]) -> None:
    """A final assistant turn is a prefill; Claude refuses one ending in whitespace."""
    last = turns[-1]
    if last["role"] == "assistant" and "text" in last["content"][-1]:
        last["content"][-1]["text"] = last["content"][-1]["text"].rstrip()


# --- cache points ------------------------------------------------------------------------------


def _cache_point(marked: Any) -> list[Block]:
    """A `cachePoint` after a part or message the client marked with `cache_control` (the
    Anthropic-style hint OpenAI-compatible clients put on content parts). More than four
    never gets here: prompt_cache.auto_marks refuses them first."""
    return cache_point(control_of(marked))


def cache_point(control: dict[str, Any] | None, *, auto: bool = False) -> list[Block]:
    """`[{"cachePoint": ...}]` for a client's breakpoint (its `ttl` kept when Converse takes
    it), or for an automatic one (`auto`); `[]` for neither."""
    if control is None and not auto:
        return []
    point: dict[str, str] = {"type": "default"}
    ttl = ttl_of(control) if control is not None else None
    if ttl in _CACHE_TTLS:
        point["ttl"] = ttl
    return [{"cachePoint": point}]


# --- text and user content -------------------------------------------------------------------


def _text_blocks(content: str | list[TextPart]) -> list[Block]:
    if isinstance(content, str):
        return _text(content)
    blocks: list[Block] = []
    for part in content:
        text = _text(part.text)
        blocks += [*text, *_cache_point(part)] if text else []
    return blocks


def _text(text: str) -> list[Block]:
    return [{"text": text}] if text.strip() else []


def _user_blocks(message: UserMessage, position: int) -> list[Block]:
    if isinstance(message.content, str):
        blocks = _text(message.content)
        return [*blocks, *_cache_point(message)] if blocks else []
    blocks = []
    for part_position, part in enumerate(message.content):
        param = f"messages[{position}].content[{part_position}]"
        if isinstance(part, TextPart):
            text = _text(part.text)
            blocks += [*text, *_cache_point(part)] if text else []
        elif isinstance(part, ImagePart):
            blocks += [_image(part.image_url.url, param), *_cache_point(part)]
        else:
            raise InvalidRequest(
                f"'{part.type}' content parts are not supported by bedrock upstreams",
                param=param,
            )
    return blocks


def _image(url: str, param: str) -> Block:
    """Converse takes image bytes (base64 in JSON) or an S3 location, never a web URL."""
    if url[:5].lower() != "data:":
        raise InvalidRequest(
            "bedrock upstreams take images only as base64 data URLs, not remote URLs",
            param=f"{param}.image_url.url",
        )
    media_type, data = split_data_url(url, f"{param}.image_url.url", KIND)
    image_format = IMAGE_FORMATS.get(media_type)
    if image_format is None or not data:
        raise InvalidRequest(
            f"media type '{media_type}' is not supported by bedrock upstreams "
            "(images: png, jpeg, gif, webp)",
            param=f"{param}.image_url.url",
        )
    return {"image": {"format": image_format, "source": {"bytes": data}}}


# --- assistant content, tool calls and results ------------------------------------------------


def _assistant_blocks(
    message: AssistantMessage, position: int, names: ToolNames, thinking: bool
) -> list[Block]:
    """Signed reasoning first (Claude: an assistant tool turn must start with it), then text,
    then the calls, as the model wrote them."""
    blocks: list[Block] = []
    if thinking and message.thinking_blocks:
        param = f"messages[{position}].thinking_blocks"
        blocks += [_reasoning(block) for block in replay_blocks(message.thinking_blocks, param)]
    content = message.content
    if isinstance(content, str):
        blocks += _text(content)
    elif content is not None:
        for part in content:
            text = _text(part.refusal if isinstance(part, RefusalPart) else part.text)
            blocks += [*text, *_cache_point(part)] if text else []
    if message.refusal:
        blocks += _text(message.refusal)
    for call_position, call in enumerate(message.tool_calls or ()):
        param = f"messages[{position}].tool_calls[{call_position}].function.arguments"
        tool_use = {
            "toolUseId": bedrock_tool_id(call.id),
            "name": names.bedrock(call.function.name),
            "input": arguments_object(call, param, KIND),
        }
        blocks.append({"toolUse": tool_use})
    return blocks


def _reasoning(block: dict[str, Any]) -> Block:
    """An Anthropic-shaped thinking block (as our answers hand them out) in Converse's form."""
    if block["type"] == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": block["data"]}}
    text = {"text": block["thinking"], "signature": block["signature"]}
    return {"reasoningContent": {"reasoningText": text}}


def _tool_result(message: ToolMessage) -> Block:
    """A JSON object result goes as `json`, anything else (arrays, strings, numbers) as
    text: Bedrock refuses a `json` that is not an object. `status` is left out: OpenAI has
    no error flag, and guessing one from the text would be wrong."""
    content = message.content
    text = content if isinstance(content, str) else "".join(part.text for part in content)
    result: list[Block] = []
    if text.lstrip().startswith("{"):
        try:
            loaded = orjson.loads(text)
        except orjson.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict):
            result.append({"json": loaded})
    if not result and text.strip():
        result.append({"text": text})
    return {"toolResult": {"toolUseId": bedrock_tool_id(message.tool_call_id), "content": result}}
