"""OpenAI chat messages -> Gemini's `systemInstruction` and `contents` turns (PROTOCOLS C.2, C.8).

Gemini has no system and no tool role: the leading system and developer messages become the
system instruction, later ones marked user turns in place (message_parts.split_system), tool
results `functionResponse` parts of a user turn. It wants roles to
alternate, a function-call turn to follow a user turn, every call answered in the next turn by
one response per call in call order, and no empty parts. Calls carry back the thought
signature their id holds (ids.py). What cannot be met is a 400 naming the message.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.errors import InvalidRequest
from app.json_depth import value_too_deep
from app.openai_types import (
    AssistantMessage,
    AudioPart,
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
from app.translators.gemini.ids import signature_of
from app.translators.message_parts import (
    TurnMessage,
    arguments_object,
    split_data_url,
    split_system,
)
from app.translators.prompt_cache import without_billing_text

Part = dict[str, Any]
"""One Gemini Part, as a plain dict: exactly one data field, plus optional flags."""

Content = dict[str, Any]
"""One Gemini Content: `{"role": "user" | "model", "parts": [Part, ...]}`."""

KIND = "gemini"
OPENING_TEXT = "."
"""The user turn put before a history that opens with a tool call (see _check)."""
_LAST = float("inf")


@dataclass(slots=True)
class _Turn:
    """A content being assembled: each part with the order it must take (a tool result's is
    its call's position in the history, so results follow their calls' order; others keep
    the order they came in, after the results)."""

    role: str
    opened_by: int
    parts: list[tuple[float, Part]] = field(default_factory=list)


@dataclass(slots=True)
class _History:
    """What later messages need from earlier ones: each call's function name and position,
    since a tool message names neither."""

    calls: dict[str, tuple[str, int]] = field(default_factory=dict)

    def remember(self, call: ToolCall) -> None:
        self.calls[call.id] = (call.function.name, len(self.calls))


def convert_messages(messages: list[Message]) -> tuple[Content | None, list[Content]]:
    """The request's messages as Gemini's system instruction (None if there is none) and its
        turns. The leading system and developer messages are the instruction, in order; later ones
    stay in place as marked user turns (split_system), so the instruction never changes when one
    appears."""
    system_contents, conversation = split_system(messages, KIND)
    system = [part for content in system_contents for part in _text_parts(content)]
    turns: list[_Turn] = []
    history = _History()
    for position, message in conversation:
        role, parts = _convert(message, position, history)
        if not parts:
            continue  # an empty message: its neighbours may now merge
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role, position))
        turns[-1].parts.extend(parts)
    _check(turns)
    contents = [
        {"role": turn.role, "parts": [part for _, part in sorted(turn.parts, key=_order)]}
        for turn in turns
    ]
    system = without_billing_text(system)  # it changes every turn: no cached prefix
    return ({"parts": system} if system else None), contents


def _order(ordered_part: tuple[float, Part]) -> float:
    return ordered_part[0]


def _convert(
    message: TurnMessage, position: int, history: _History
) -> tuple[str, list[tuple[float, Part]]]:
    if isinstance(message, UserMessage):
        return "user", [(_LAST, part) for part in _user_parts(message, position)]
    if isinstance(message, AssistantMessage):
        return "model", [(_LAST, part) for part in _model_parts(message, position, history)]
    return "user", [_function_response(message, history)]


def _check(turns: list[_Turn]) -> None:
    if not turns:
        raise InvalidRequest(
            "gemini upstreams need at least one user or assistant message with content",
            param="messages",
        )
    first = turns[0]
    if first.role == "model" and any("functionCall" in part for _, part in first.parts):
        # Gemini: "Please ensure that function call turn comes immediately after a user turn or
        # after a function response turn" (C.2). Only the first turn can break it (model turns
        # merge), so a history that opens with the assistant calling a tool gets the smallest
        # neutral user turn in front (Gemini rejects an empty text part).
        turns.insert(0, _Turn("user", first.opened_by, [(_LAST, {"text": OPENING_TEXT})]))


def _text_parts(content: str | list[TextPart]) -> list[Part]:
    """Text as text parts, without the empty ones Gemini rejects."""
    texts = [content] if isinstance(content, str) else [part.text for part in content]
    return [{"text": text} for text in texts if text]


# --- user content ----------------------------------------------------------------------------


def _user_parts(message: UserMessage, position: int) -> list[Part]:
    if isinstance(message.content, str):
        return _text_parts(message.content)
    parts: list[Part] = []
    for part_position, part in enumerate(message.content):
        parts.extend(_user_part(part, f"messages[{position}].content[{part_position}]"))
    return parts


def _user_part(part: UserPart, param: str) -> list[Part]:
    if isinstance(part, TextPart):
        return _text_parts(part.text)
    if isinstance(part, ImagePart):
        return [_image_part(part.image_url.url, param)]
    if isinstance(part, AudioPart):
        return [_audio_part(part.input_audio, param)]
    return [_file_part(part, param)]


def _image_part(url: str, param: str) -> Part:
    """A data URL is sent inline; an http(s) URL as `fileData`, which Gemini fetches (its
    type guessed from the name when it can be, since the field is optional)."""
    scheme = url[:8].lower()
    if scheme.startswith("data:"):
        return _inline(*split_data_url(url, param, KIND))
    if scheme.startswith(("https://", "http://")):
        file_data = {"fileUri": url}
        media_type = mimetypes.guess_type(url.split("?", 1)[0])[0]
        if media_type is not None:
            file_data = {"mimeType": media_type, "fileUri": url}
        return {"fileData": file_data}
    raise InvalidRequest(
        "image URLs for gemini upstreams must be http(s) URLs or base64 data URLs", param=param
    )


def _audio_part(input_audio: dict[str, Any], param: str) -> Part:
    data, audio_format = input_audio.get("data"), input_audio.get("format")
    if not isinstance(data, str) or not data or not isinstance(audio_format, str):
        raise InvalidRequest("input_audio parts need base64 'data' and a 'format'", param=param)
    return _inline(f"audio/{audio_format.lower()}", data)


def _file_part(part: FilePart, param: str) -> Part:
    file_data, filename = part.file.get("file_data"), part.file.get("filename")
    if not isinstance(file_data, str) or not file_data:
        raise InvalidRequest(
            "file parts for gemini upstreams need inline 'file_data' "
            "(uploaded file ids exist only on OpenAI)",
            param=param,
        )
    if file_data[:5].lower() == "data:":
        return _inline(*split_data_url(file_data, param, KIND))
    media_type = mimetypes.guess_type(filename)[0] if isinstance(filename, str) else None
    if media_type is None:
        raise InvalidRequest(
            "file parts for gemini upstreams need a data URL, or base64 data with a filename "
            "whose extension gives its type",
            param=param,
        )
    return _inline(media_type, file_data)


def _inline(media_type: str, data: str) -> Part:
    return {"inlineData": {"mimeType": media_type, "data": data}}


# --- assistant turns, calls and results ----------------------------------------------------


def _model_parts(message: AssistantMessage, position: int, history: _History) -> list[Part]:
    """Text, then the calls, each with the thought signature its id carries. The client's
    `reasoning_content` is dropped: Gemini takes thoughts back only as signatures."""
    content = message.content
    if content is None:
        texts = []
    elif isinstance(content, str):
        texts = [content]
    else:
        texts = [part.text if isinstance(part, TextPart) else _refusal(part) for part in content]
    if message.refusal:
        texts.append(message.refusal)
    parts: list[Part] = [{"text": text} for text in texts if text]
    for call_position, call in enumerate(message.tool_calls or ()):
        param = f"messages[{position}].tool_calls[{call_position}].function.arguments"
        history.remember(call)
        function_call = {"name": call.function.name, "args": arguments_object(call, param, KIND)}
        part: Part = {"functionCall": function_call}
        signature = signature_of(call.id)
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _refusal(part: RefusalPart) -> str:
    return part.refusal


def _function_response(message: ToolMessage, history: _History) -> tuple[float, Part]:
    """A tool result as a `functionResponse`, named after its call (Gemini matches responses
    to calls by name and order; a tool message carries only the call's id). That the call is
    there, in the turn just before, split_system has checked (message_parts.py)."""
    name, call_order = history.calls[message.tool_call_id]
    content = message.content
    text = content if isinstance(content, str) else "".join(part.text for part in content)
    return call_order, {"functionResponse": {"name": name, "response": _response_object(text)}}


def _response_object(text: str) -> dict[str, Any]:
    """`functionResponse.response` must be an object: a result that is a JSON object is sent
    as that object; anything else, as the text it is, under `result` (what python-genai
    sends), so nothing the tool said is reinterpreted. So is an object nested deeper than
    request JSON may be (app.json_depth): as an object it could not be serialised."""
    try:
        loaded = orjson.loads(text)
    except orjson.JSONDecodeError:
        loaded = None
    if isinstance(loaded, dict) and not value_too_deep(loaded, text):
        return loaded
    return {"result": text}
