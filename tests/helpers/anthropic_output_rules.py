"""What Anthropic's Messages API refuses in a request's output settings and tool declarations,
as a pure check: `output_config` that is not an object, a `format` other than
`{"type": "json_schema", "schema": {...}}` (its only documented format, PROTOCOLS B.2/B.6),
`output_config.format` given with the deprecated top-level `output_format`, two tools of one
name, and a `tool_choice` naming a tool that was not declared."""

from __future__ import annotations

from typing import Any

NOT_AN_OBJECT = "output_config: Input should be a valid dictionary"
FORMAT_TYPE = "output_config.format.type: Input should be 'json_schema'"
NO_SCHEMA = "output_config.format.schema: Field required"
BAD_SCHEMA = "output_config.format.schema: Input should be a valid dictionary"
BOTH_FORMATS = "Both output_format and output_config.format were provided."
DUPLICATE_TOOLS = "tools: Tool names must be unique."
UNKNOWN_CHOICE = "tool_choice.name: Tool '{name}' not found in provided tools"


def output_problems(body: dict[str, Any]) -> list[str]:
    """Every reason Anthropic would refuse these fields; [] if it would take them."""
    problems = tool_problems(body.get("tools"), body.get("tool_choice"))
    output_config = body.get("output_config")
    if output_config is None:
        return problems
    if not isinstance(output_config, dict):
        return [*problems, NOT_AN_OBJECT]
    output_format = output_config.get("format")
    if output_format is None:
        return problems
    if body.get("output_format") is not None:
        problems.append(BOTH_FORMATS)
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        return [*problems, FORMAT_TYPE]
    if "schema" not in output_format:
        problems.append(NO_SCHEMA)
    elif not isinstance(output_format["schema"], dict):
        problems.append(BAD_SCHEMA)
    return problems


def tool_problems(tools: Any, tool_choice: Any) -> list[str]:
    names = [tool.get("name") for tool in tools or () if isinstance(tool, dict)]
    problems = [DUPLICATE_TOOLS] if len(names) != len(set(names)) else []
    forced = isinstance(tool_choice, dict) and tool_choice.get("type") == "tool"
    if forced and tool_choice.get("name") not in names:
        problems.append(UNKNOWN_CHOICE.format(name=tool_choice.get("name")))
    return problems
