"""Which tool the demo model calls, and whether it must call one at all.

- `tool_choice` "none", or no tool offered: no call;
- a named function: that one, always (the client forbade any other);
- "required" (or `allowed_tools` in mode "required"): the first offered tool not yet called
  in the conversation, else the last offered one. Frameworks whose final answer is itself a
  tool (pydantic-ai's `final_result`, smolagents' `final_answer`, usually offered last) force
  a call on every turn; walking through the tools ends their loop offline instead of calling
  the first tool forever. A call counts as made when an assistant message has it in
  `tool_calls`, or names it in its text the way a replayed call does (smolagents'
  ToolCallingAgent sends its past calls back as `Calling tools:\n[{... 'function': {'name':
  'get_weather', ...}}]` text, and their results as user messages);
- "auto" (or absent): the first tool, but only before any tool result, since after one the
  demo answers (model.py).
"""

from __future__ import annotations

import re
from typing import Any

Function = dict[str, Any]


def offered_functions(request: dict[str, Any]) -> list[Function]:
    """The `function` objects of the offered tools that have a name, in order."""
    return [
        tool["function"]
        for tool in _list(request.get("tools"))
        if isinstance(tool, dict)
        and isinstance(tool.get("function"), dict)
        and isinstance(tool["function"].get("name"), str)
    ]


def chosen_function(request: dict[str, Any], messages: list[dict[str, Any]]) -> Function | None:
    """The `function` of the tool to call now, or None when the demo should answer instead:
    when no tool is offered, tool_choice is "none", or a tool result just came back and no
    call is forced."""
    functions = offered_functions(request)
    choice = request.get("tool_choice")
    if not functions or choice == "none":
        return None
    named = _named(choice)
    if named is not None:
        return next((f for f in functions if f["name"] == named), functions[0])
    allowed = _allowed(choice, functions)
    if _forced(choice):
        called = called_names(messages)
        return next((f for f in allowed if f["name"] not in called), allowed[-1])
    answering = bool(messages) and messages[-1].get("role") == "tool"
    return None if answering else allowed[0]


# `'name': 'get_weather'` or `"name": "get_weather"`: a call replayed as text (a Python or
# JSON rendering of the call object).
_REPLAYED_NAME = re.compile(r"""(['"])name\1\s*:\s*(['"])([^'"\s]+)\2""")


def called_names(messages: list[dict[str, Any]]) -> set[str]:
    """The names of every tool an assistant message of the conversation called, in
    `tool_calls` or replayed as text."""
    names: set[str] = set()
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in _list(message.get("tool_calls")):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
        names.update(match[2] for match in _REPLAYED_NAME.findall(_text(message.get("content"))))
    return names


def _text(content: Any) -> str:
    """A message's text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    return "\n".join(
        part["text"]
        for part in _list(content)
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _named(choice: Any) -> str | None:
    """The function name in `{"type": "function", "function": {"name": X}}` (or the flat
    `{"type": "function", "name": X}` of the Responses API)."""
    if not isinstance(choice, dict) or choice.get("type") not in ("function", None):
        return None
    named = choice.get("function")
    name = named.get("name") if isinstance(named, dict) else choice.get("name")
    return name if isinstance(name, str) else None


def _allowed(choice: Any, functions: list[Function]) -> list[Function]:
    """The offered functions an `allowed_tools` choice permits (all of them otherwise, or
    when it names none that is offered)."""
    allowed = choice.get("allowed_tools") if isinstance(choice, dict) else None
    if not isinstance(allowed, dict):
        return functions
    names = {_tool_name(tool) for tool in _list(allowed.get("tools"))}
    return [f for f in functions if f["name"] in names] or functions


def _forced(choice: Any) -> bool:
    """Whether the client demands a call: "required", or `allowed_tools` in that mode."""
    if choice == "required":
        return True
    allowed = choice.get("allowed_tools") if isinstance(choice, dict) else None
    return isinstance(allowed, dict) and allowed.get("mode") == "required"


def _tool_name(tool: Any) -> str | None:
    """A tool's name in an `allowed_tools` list: nested in `function`, or flat."""
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
