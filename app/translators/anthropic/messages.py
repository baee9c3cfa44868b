"""OpenAI chat messages -> Anthropic Messages `system` blocks and alternating `messages` turns.

Anthropic is stricter than OpenAI about history: roles must alternate,
tool results must open the user turn after the `tool_use` blocks, text blocks may not be blank,
and tool ids must match a pattern (PROTOCOLS B.3, B.9). Everything here exists to meet those
rules without changing what the conversation says; what cannot be met is a 400 naming the part.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from app.errors import InvalidRequest
from app.openai_types import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    RefusalPart,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    UserPart,
)
from app.translators.anthropic.thinking import replay_blocks
from app.translators.message_parts import (
    TurnMessage,
    append_turn,
    arguments_object,
    split_data_url,
    split_system,
)
from app.translators.prompt_cache import control_of, ephemeral, system_controls

Block = dict[str, Any]
"""One Anthropic content block, as a plain dict."""

Turn = dict[str, Any]
"""One Anthropic message: `{"role": "user" | "assistant", "content": [Block, ...]}`."""

# Anthropic accepts these image types only (B.3); PDFs go in a `document` block.
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
PDF_MEDIA_TYPE = "application/pdf"

_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_ID_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def convert_messages(
    messages: list[Message], *, thinking: bool = False
) -> tuple[list[Block], list[Turn]]:
    """The request's messages as Anthropic's top-level `system` blocks (the leading system and
    developer messages, in order: the Messages API has no mid-conversation system turn, B.10;
    later ones stay in place as marked user turns, split_system, so the cached prefix holds)
    and its turns. Assistant thinking blocks are replayed only with `thinking` on: with it
    off, Anthropic refuses them in a final assistant turn and ignores them elsewhere. The
    client's `cache_control` goes on the block its part or message became."""
    system_contents, conversation = split_system(messages, "anthropic")
    system: list[Block] = []
    for content, control in zip(system_contents, system_controls(messages), strict=True):
        _mark_last(system, text_blocks(content), control)
    turns: list[Turn] = []
    for position, message in conversation:
        role, blocks = _convert(message, position, thinking)
        append_turn(turns, role, blocks)
    _check_opening(turns)
    for turn in turns:
        if turn["role"] == "user":
            _results_first(turn["content"])
    _trim_prefill(turns)
    return system, turns


def _convert(message: TurnMessage, position: int, thinking: bool) -> tuple[str, list[Block]]:
    if isinstance(message, UserMessage):
        return "user", _user_blocks(message, position)
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message, position, thinking)
    return "user", [_tool_result(message)]


def _check_opening(turns: list[Turn]) -> None:
    """A leading assistant turn goes as it is: Anthropic's API has accepted one since 2024 (a
    greeting first, or a history trimmed to fit). Only a conversation with nothing in it at
    all cannot be sent: "messages: at least one message is required"."""
    if not turns:
        raise InvalidRequest(
            "anthropic upstreams need at least one message with non-empty content",
            param="messages",
        )


def _results_first(blocks: list[Block]) -> None:
    """`tool_result` blocks must open their user turn (B.9.1): a user message merged with the
    tool messages before it keeps its text, after the results. Stable, so call order holds."""
    blocks.sort(key=lambda block: block["type"] != "tool_result")


def _trim_prefill(turns: list[Turn]) -> None:
    """A final assistant turn is a prefill, and Anthropic rejects one ending in whitespace
    (B.9.8). Only the last text block is touched; it is non-blank, so it stays non-empty."""
    last = turns[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        last["content"][-1]["text"] = last["content"][-1]["text"].rstrip()


def text_blocks(content: str | list[TextPart]) -> list[Block]:
    """Text content as text blocks, without the blank ones Anthropic rejects (B.9.3)."""
    if isinstance(content, str):
        return _text_block_list(content)
    blocks: list[Block] = []
    for part in content:
        _mark_last(blocks, _text_block_list(part.text), control_of(part))
    return blocks


def _mark_last(blocks: list[Block], added: list[Block], control: dict[str, Any] | None) -> None:
    """`added` appended to `blocks`, its last block carrying the client's breakpoint."""
    if control is not None and added:
        added[-1]["cache_control"] = ephemeral(control)
    blocks += added


def _text_block_list(text: str) -> list[Block]:
    return [{"type": "text", "text": text}] if text.strip() else []


# --- user content ----------------------------------------------------------------------------


def _user_blocks(message: UserMessage, position: int) -> list[Block]:
    blocks: list[Block] = []
    if isinstance(message.content, str):
        _mark_last(blocks, _text_block_list(message.content), control_of(message))
        return blocks
    for part_position, part in enumerate(message.content):
        param = f"messages[{position}].content[{part_position}]"
        _mark_last(blocks, _user_part(part, param), control_of(part))
    return blocks


def _user_part(part: UserPart, param: str) -> list[Block]:
    if isinstance(part, TextPart):
        return _text_block_list(part.text)
    if isinstance(part, ImagePart):
        return [_image_block(part.image_url.url, param)]
    if isinstance(part, FilePart):
        return [_file_block(part.file, param)]
    raise InvalidRequest(
        f"'{part.type}' content parts are not supported by anthropic upstreams", param=param
    )


def _image_block(url: str, param: str) -> Block:
    scheme = url[:8].lower()
    if scheme.startswith("data:"):
        return _data_url_block(url, param, title=None)
    if scheme.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise InvalidRequest(
        "image URLs for anthropic upstreams must be http(s) URLs or base64 data URLs",
        param=param,
    )


def _file_block(file: dict[str, Any], param: str) -> Block:
    file_data = file.get("file_data")
    filename = file.get("filename")
    title = filename if isinstance(filename, str) and filename else None
    if not isinstance(file_data, str) or not file_data:
        raise InvalidRequest(
            "file parts for anthropic upstreams need inline 'file_data' "
            "(uploaded file ids exist only on OpenAI)",
            param=param,
        )
    if file_data[:5].lower() == "data:":
        return _data_url_block(file_data, param, title)
    if title is not None and title.lower().endswith(".pdf"):
        return _base64_block(PDF_MEDIA_TYPE, file_data, param, title)
    raise InvalidRequest(
        "file parts for anthropic upstreams must be PDFs: a data URL, or base64 data with a "
        "filename ending in .pdf",
        param=param,
    )


def _data_url_block(url: str, param: str, title: str | None) -> Block:
    """A data URL -> an image or document block."""
    media_type, data = split_data_url(url, param, "anthropic")
    return _base64_block(media_type, data, param, title)


def _base64_block(media_type: str, data: str, param: str, title: str | None) -> Block:
    source = {"type": "base64", "media_type": media_type, "data": data}
    if media_type in IMAGE_MEDIA_TYPES:
        return {"type": "image", "source": source}
    if media_type == PDF_MEDIA_TYPE:
        document: Block = {"type": "document", "source": source}
        if title is not None:
            document["title"] = title
        return document
    raise InvalidRequest(
        f"media type '{media_type}' is not supported by anthropic upstreams "
        "(images: jpeg, png, gif, webp; documents: pdf)",
        param=param,
    )


# --- assistant content and tool calls ----------------------------------------------------------


def _assistant_blocks(message: AssistantMessage, position: int, thinking: bool) -> list[Block]:
    """Thinking blocks first ("a final `assistant` message must start with a thinking
    block"), then text, then the calls: Anthropic replays a turn in content order (B.10). The
    client's `reasoning_content` is dropped: the signed thinking blocks carry the same text."""
    blocks: list[Block] = []
    if thinking and message.thinking_blocks:
        param = f"messages[{position}].thinking_blocks"
        blocks.extend(replay_blocks(message.thinking_blocks, param))
    content = message.content
    if isinstance(content, str):
        blocks.extend(_text_block_list(content))
    elif content is not None:
        for part in content:
            _mark_last(blocks, _text_block_list(_part_text(part)), control_of(part))
    if message.refusal:
        blocks.extend(_text_block_list(message.refusal))
    for call_position, call in enumerate(message.tool_calls or ()):
        blocks.append(_tool_use(call, f"messages[{position}].tool_calls[{call_position}]"))
    return blocks


def _part_text(part: TextPart | RefusalPart) -> str:
    return part.text if isinstance(part, TextPart) else part.refusal


def _tool_use(call: ToolCall, param: str) -> Block:
    return {
        "type": "tool_use",
        "id": anthropic_tool_id(call.id),
        "name": call.function.name,
        "input": arguments_object(call, f"{param}.function.arguments", "anthropic"),
    }


def _tool_result(message: ToolMessage) -> Block:
    """A tool message as a `tool_result`. Blank content is left out (it is optional, and blank
    text is rejected); `is_error` is left at its default, as OpenAI has no such flag."""
    block: Block = {"type": "tool_result", "tool_use_id": anthropic_tool_id(message.tool_call_id)}
    content = message.content
    if isinstance(content, str):
        if content.strip():
            block["content"] = content
    elif blocks := text_blocks(content):
        block["content"] = blocks
    if (control := control_of(message)) is not None:
        block["cache_control"] = ephemeral(control)
    return block


def anthropic_tool_id(openai_id: str) -> str:
    """A tool call id Anthropic accepts (`^[a-zA-Z0-9_-]+$`, B.3/B.9.6).

    Ids from other upstreams (`functions.get_weather:0` from Kimi/vLLM) are rewritten the same
    way wherever they appear, so a `tool_use` and its `tool_result` still match. The hash keeps
    ids that differ only in their replaced characters apart. Valid ids are left as they are.
    """
    if _TOOL_ID.fullmatch(openai_id):
        return openai_id
    digest = hashlib.sha256(openai_id.encode()).hexdigest()[:10]
    return f"{_TOOL_ID_BAD_CHARS.sub('_', openai_id)}_{digest}"
