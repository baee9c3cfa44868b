"""How deep a client's JSON may nest: one limit for every client-facing API and upstream kind.

orjson parses 1024 levels but serialises only 254, and every kind re-serialises what the client
sent (translated kinds a few levels deeper than it stood, inside their own wrapping), so a body
between the two would pass the edge and fail on the way out as a 500. The edge refuses it
instead, naming where the limit was passed. A tool call's `arguments` is JSON text that the
translated kinds parse and nest in place (Anthropic's `tool_use.input`, Gemini's
`functionCall.args`), so its JSON counts as if it stood where the string does.

Ordinary requests pay two `bytes.count`s: a body with no more `{` and `[` than the limit cannot
nest deeper than it. Only bodies with more are walked, level by level, without building paths;
the path is found only for a refusal. (Arguments hiding their brackets as `\u007b` escapes in a
body with few literal ones pass the edge; the translated kinds, which parse them, refuse JSON
that nests deeper than the limit on its own, which still serialises inside any wrapping. To an
openai upstream they are only a string.)
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson

from app.errors import InvalidRequest

MAX_JSON_DEPTH = 128
"""The most levels of objects and arrays a request body may nest (the body itself is level 1).
Half orjson's 254, so every kind's wrapping fits with room to spare."""

JSON_TEXT_KEY = "arguments"
"""The key whose string values are JSON text a translator parses and nests in place (a tool
call's `function.arguments`, the Responses API's `function_call.arguments`)."""

ParamStyle = Literal["dotted", "openai"]
"""How a refusal writes the path: Anthropic's `messages.0.content` or OpenAI's
`messages[0].content`."""

Path = tuple[str | int, ...]
_Link = tuple["_Link", str | int] | None  # a path as parent links: (parent's link, key)

_DEPTH_EXCEEDED = "depth limit exceeded"  # how orjson.loads starts its message past 1024 levels
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],]', re.DOTALL)


def check_body_depth(body: bytes, wire: Any, style: ParamStyle) -> None:
    """Refuse (400, naming the place) a decoded body nested deeper than MAX_JSON_DEPTH."""
    if body.count(b"{") + body.count(b"[") <= MAX_JSON_DEPTH:
        return
    if _exceeds([wire], 1, MAX_JSON_DEPTH, expand=True):
        raise too_deep(_too_deep_path(wire, MAX_JSON_DEPTH), style)


def refuse_if_too_deep_to_parse(
    body: bytes, error: orjson.JSONDecodeError, style: ParamStyle
) -> None:
    """A body orjson would not parse for its depth (past 1024 levels): the same refusal."""
    if str(error).startswith(_DEPTH_EXCEEDED):
        raise too_deep(_raw_too_deep_path(body, MAX_JSON_DEPTH), style)


def too_deep(path: Path, style: ParamStyle) -> InvalidRequest:
    return too_deep_at(format_path(path, style))


def too_deep_at(param: str) -> InvalidRequest:
    return InvalidRequest(
        f"{param}: nested too deeply; request JSON may nest at most {MAX_JSON_DEPTH} levels "
        "(JSON text in tool call arguments counts where it stands)",
        param=param,
    )


def format_path(path: Path, style: ParamStyle) -> str:
    if style == "dotted":
        return ".".join(str(part) for part in path)
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def value_too_deep(value: Any, text: str | None = None, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON value nests deeper than `limit`; `text`, the JSON it was parsed from,
    answers at once for the usual value with no more `{` and `[` than that."""
    if text is not None and text.count("{") + text.count("[") <= limit:
        return False
    return type(value) in (dict, list) and _exceeds([value], 1, limit, expand=False)


def _exceeds(level: list[Any], depth: int, limit: int, *, expand: bool) -> bool:
    """Whether any container nests deeper than `limit`, `level` standing at `depth`; with
    `expand`, `arguments` strings count as the JSON they hold, nested where they stand."""
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        keep = below.append
        for node in level:
            values = node
            if type(node) is dict:
                if expand:
                    text = node.get(JSON_TEXT_KEY)
                    if type(text) is str and _text_exceeds(text, limit - depth):
                        return True
                values = node.values()
            for value in values:
                kind = type(value)
                if kind is dict or kind is list:
                    keep(value)
        level = below
        depth += 1
    return False


def _text_exceeds(text: str, budget: int) -> bool:
    """Whether JSON text, parsed, nests deeper than `budget` (text that is not JSON: no)."""
    if text.count("{") + text.count("[") <= budget:
        return False
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        return str(error).startswith(_DEPTH_EXCEEDED)
    return value_too_deep(value, limit=budget)


def _too_deep_path(root: Any, limit: int) -> Path:
    """The first place, in document order, where `root` nests deeper than `limit` (an
    `arguments` string whose JSON does names the string). Parents are linked, not copied, so
    a wide body costs no more than a narrow one."""
    stack: list[tuple[Any, int, _Link]] = [(root, 1, None)]
    found: _Link = None
    while stack:
        node, depth, link = stack.pop()
        if depth > limit:
            found = link
            break
        if type(node) is dict:
            text = node.get(JSON_TEXT_KEY)
            if type(text) is str and _text_exceeds(text, limit - depth):
                found = (link, JSON_TEXT_KEY)
                break
            children: list[tuple[str | int, Any]] = list(node.items())
        else:
            children = list(enumerate(node))
        for key, value in reversed(children):
            if type(value) is dict or type(value) is list:
                stack.append((value, depth + 1, (link, key)))
    path: list[str | int] = []
    while found is not None:
        found, key = found
        path.append(key)
    return tuple(reversed(path))


def _raw_too_deep_path(body: bytes, limit: int) -> Path:
    """Where a body too deep for orjson to parse passes `limit`, read from its bytes: the key
    or index each open container is at, up to the first container past the limit."""
    path: list[str | int] = []
    in_object: list[bool] = []
    expecting_key = False
    for match in _TOKEN.finditer(body):
        token = match.group()
        first = token[:1]
        if first == b'"':
            if expecting_key:
                path[-1] = _key(token)
                expecting_key = False
        elif first in (b"{", b"["):
            if len(in_object) >= limit:
                return tuple(path)
            in_object.append(first == b"{")
            path.append("" if first == b"{" else 0)
            expecting_key = first == b"{"
        elif first in (b"}", b"]"):
            if in_object:
                in_object.pop()
                path.pop()
            expecting_key = False
        elif in_object:  # a comma
            if in_object[-1]:
                expecting_key = True
            else:
                path[-1] = int(path[-1]) + 1
    return tuple(path)


def _key(token: bytes) -> str:
    try:
        key = orjson.loads(token)
    except orjson.JSONDecodeError:
        key = None
    return key if isinstance(key, str) else token[1:-1].decode("utf-8", "replace")
