"""What the Gemini API refuses in a generateContent request, as a pure check: each rule is one
that PROTOCOLS §C quotes from a real Gemini 400 (unknown schema keywords, untyped nodes,
`properties` off objects, `required` naming no property, arrays without `items`, roles that
do not alternate, a function-call turn not after a user turn, a response count that differs
from the call count, a thought signature missing or altered). Tests run every request the
proxy sends through it, so passing tests prove the proxy sends what Gemini accepts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

BODY_FIELDS = {
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
}
DATA_FIELDS = {
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
}
PART_FLAGS = {"thought", "thoughtSignature"}
SCHEMA_FIELDS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "propertyOrdering",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
    "anyOf",
    "example",
    "default",
}
TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
FORMATS = {"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}}
FORMATS["INTEGER"] = {"int32", "int64"}
DECLARATION_FIELDS = {"name", "description", "parameters", "parametersJsonSchema", "response"}
GENERATION_FIELDS = {
    "temperature",
    "topP",
    "topK",
    "candidateCount",
    "maxOutputTokens",
    "stopSequences",
    "presencePenalty",
    "frequencyPenalty",
    "seed",
    "responseMimeType",
    "responseSchema",
    "responseJsonSchema",
    "responseLogprobs",
    "logprobs",
    "thinkingConfig",
}
MIME_TYPES = {"text/plain", "application/json", "text/x.enum"}
FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")

ALTERNATE = "Please ensure that multiturn requests alternate between user and model."
CALL_AFTER_USER = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
RESPONSE_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
MISSING_SIGNATURE = "Function call is missing a thought_signature in functionCall parts."

Signatures = Mapping[tuple[str, str], str]
"""(function name, its args as canonical JSON) -> the thoughtSignature Gemini issued with it."""


def call_key(function_call: Mapping[str, Any]) -> tuple[str, str]:
    return str(function_call.get("name")), json.dumps(
        function_call.get("args") or {}, sort_keys=True
    )


def unknown(names: Any, allowed: set[str], where: str) -> list[str]:
    return [
        f"Invalid JSON payload received. Unknown name \"{name}\" at '{where}': Cannot find field."
        for name in names
        if name not in allowed
    ]


def request_problems(body: Any, issued: Signatures | None = None) -> list[str]:
    """Every reason Gemini would refuse this request body; [] if it would take it."""
    if not isinstance(body, dict):
        return ["Invalid JSON payload received."]
    problems = unknown(body, BODY_FIELDS, "request")
    problems += contents_problems(body.get("contents"), issued or {})
    problems += system_problems(body.get("systemInstruction"))
    declared = set()
    for position, tool in enumerate(body.get("tools") or []):
        for index, declaration in enumerate(tool.get("functionDeclarations") or []):
            where = f"tools[{position}].function_declarations[{index}]"
            problems += declaration_problems(declaration, where)
            declared.add(declaration.get("name"))
    problems += tool_config_problems(body.get("toolConfig"), declared)
    problems += generation_problems(body.get("generationConfig"))
    return problems


def contents_problems(contents: Any, issued: Signatures) -> list[str]:
    if not isinstance(contents, list) or not contents:
        return ["contents is not specified"]
    problems: list[str] = []
    previous: dict[str, Any] | None = None
    for position, content in enumerate(contents):
        where = f"contents[{position}]"
        problems += content_problems(content, where, issued)
        if previous is not None and previous.get("role") == content.get("role"):
            problems.append(ALTERNATE)
        problems += turn_order_problems(previous, content)
        previous = content
    return problems


def content_problems(content: Any, where: str, issued: Signatures) -> list[str]:
    if not isinstance(content, dict):
        return [f"{where}: must be an object"]
    problems = unknown(content, {"role", "parts"}, where)
    if content.get("role") not in ("user", "model"):
        problems.append(f"{where}.role: Please use a valid role: user, model.")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        return [*problems, f"{where}.parts: contents.parts must not be empty."]
    for index, part in enumerate(parts):
        problems += part_problems(part, f"{where}.parts[{index}]", issued)
    return problems


def part_problems(part: Any, where: str, issued: Signatures) -> list[str]:
    if not isinstance(part, dict):
        return [f"{where}: must be an object"]
    problems = unknown(part, DATA_FIELDS | PART_FLAGS, where)
    data = [name for name in part if name in DATA_FIELDS]
    if len(data) != 1:
        problems.append(f"{where}: a part holds exactly one data field, not {data}")
    if part.get("text") == "":
        problems.append(
            f"{where}: Unable to submit request because it has an empty text parameter."
        )
    problems += function_part_problems(part, where)
    function_call = part.get("functionCall")
    if isinstance(function_call, dict) and call_key(function_call) in issued:
        if part.get("thoughtSignature") != issued[call_key(function_call)]:
            problems.append(f"{where}: {MISSING_SIGNATURE}")
    elif "thoughtSignature" in part and part["thoughtSignature"] not in issued.values():
        problems.append(f"{where}: Thought signature is not valid.")
    return problems


def function_part_problems(part: dict[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    function_call = part.get("functionCall")
    if function_call is not None:
        problems += unknown(function_call, {"name", "args", "id"}, f"{where}.function_call")
        if not isinstance(function_call.get("args", {}), dict):
            problems.append(f"{where}.function_call.args: must be an object")
    function_response = part.get("functionResponse")
    if function_response is not None:
        problems += unknown(function_response, {"name", "response", "id"}, where)
        if not isinstance(function_response.get("response"), dict):
            problems.append(f"{where}.function_response.response: must be an object")
        if not function_response.get("name"):
            problems.append(f"{where}.function_response.name: Name cannot be empty.")
    for field, keys in (
        ("inlineData", {"mimeType", "data"}),
        ("fileData", {"mimeType", "fileUri"}),
    ):
        if field in part:
            problems += unknown(part[field], keys, f"{where}.{field}")
    return problems


def _calls(content: Mapping[str, Any] | None) -> list[str]:
    parts = (content or {}).get("parts") or []
    return [
        p["functionCall"].get("name") for p in parts if isinstance(p, dict) and "functionCall" in p
    ]


def _responses(content: Mapping[str, Any] | None) -> list[str]:
    parts = (content or {}).get("parts") or []
    return [
        p["functionResponse"].get("name")
        for p in parts
        if isinstance(p, dict) and "functionResponse" in p
    ]


def turn_order_problems(previous: dict[str, Any] | None, content: Any) -> list[str]:
    """A call turn follows a user turn; the turn after it answers every call, in order."""
    if not isinstance(content, dict):
        return []
    problems: list[str] = []
    if _calls(content) and (previous is None or previous.get("role") != "user"):
        problems.append(CALL_AFTER_USER)
    if _calls(previous) and _responses(content) != _calls(previous):
        problems.append(RESPONSE_COUNT)
    if _responses(content) and not _calls(previous):
        problems.append("function response parts must answer the function call turn before them")
    return problems


def system_problems(system: Any) -> list[str]:
    if system is None:
        return []
    problems = unknown(system, {"role", "parts"}, "system_instruction")
    for index, part in enumerate(system.get("parts") or [None]):
        if not isinstance(part, dict) or set(part) != {"text"} or not part["text"]:
            problems.append(f"system_instruction.parts[{index}]: text parts only")
    return problems


def declaration_problems(declaration: Any, where: str) -> list[str]:
    problems = unknown(declaration, DECLARATION_FIELDS, where)
    if not FUNCTION_NAME.fullmatch(str(declaration.get("name"))):
        problems.append(f"{where}.name: Invalid function name.")
    if "parameters" in declaration:
        problems += schema_problems(declaration["parameters"], f"{where}.parameters", root=True)
    return problems


def schema_problems(schema: Any, where: str, *, root: bool = False) -> list[str]:
    """Gemini's Schema: known fields only, one type (or anyOf), and each keyword only on the
    type that has it."""
    if not isinstance(schema, dict):
        return [f"{where}: must be a Schema object"]
    problems = unknown(schema, SCHEMA_FIELDS, where)
    schema_type = schema.get("type")
    if isinstance(schema_type, list):
        return [*problems, f"{where}.type: Proto field is not repeating, cannot start list."]
    schema_type = schema_type.upper() if isinstance(schema_type, str) else None
    if schema_type is None and "anyOf" not in schema:
        problems.append(
            f"{where}.type: must be specified when not using one_of, any_of or all_of fields"
        )
    elif schema_type is not None and schema_type not in TYPES:
        problems.append(f"{where}.type: Invalid value")
    problems += keyword_problems(schema, schema_type, where, root)
    for name, sub in (schema.get("properties") or {}).items():
        problems += schema_problems(sub, f"{where}.properties[{name}]")
    if "items" in schema:
        problems += schema_problems(schema["items"], f"{where}.items")
    for index, branch in enumerate(schema.get("anyOf") or []):
        problems += schema_problems(branch, f"{where}.any_of[{index}]")
    return problems


def keyword_problems(
    schema: dict[str, Any], schema_type: str | None, where: str, root: bool
) -> list[str]:
    problems: list[str] = []
    for keyword in ("properties", "required", "minProperties", "maxProperties"):
        if keyword in schema and schema_type != "OBJECT":
            problems.append(f"{where}.{keyword}: only allowed for OBJECT type")
    names = schema.get("properties") or {}
    for index, name in enumerate(schema.get("required") or []):
        if name not in names:
            problems.append(f"{where}.required[{index}]: property is not defined")
    if root and schema_type == "OBJECT" and not names:
        problems.append(f"{where}.properties: should be non-empty for OBJECT type")
    if schema_type == "ARRAY" and "items" not in schema:
        problems.append(f"{where}.items: missing field.")
    if "enum" in schema and (
        schema_type != "STRING" or not all(isinstance(value, str) for value in schema["enum"])
    ):
        problems.append(f"{where}.enum: function declaration enum only allowed for STRING type")
    if "format" in schema and schema["format"] not in FORMATS.get(schema_type or "", set()):
        problems.append(f"{where}.format: unsupported format for {schema_type} type")
    if schema.get("format") == "enum" and not schema.get("enum"):
        problems.append(f"{where}.enum: should be non-empty for STRING type with enum format")
    return problems


def tool_config_problems(tool_config: Any, declared: set[Any]) -> list[str]:
    if tool_config is None:
        return []
    problems = unknown(tool_config, {"functionCallingConfig"}, "tool_config")
    calling = tool_config.get("functionCallingConfig") or {}
    problems += unknown(calling, {"mode", "allowedFunctionNames"}, "function_calling_config")
    mode = calling.get("mode")
    if mode not in ("AUTO", "ANY", "NONE", "VALIDATED"):
        problems.append(f"function_calling_config.mode: Invalid value {mode!r}")
    names = calling.get("allowedFunctionNames")
    if names is not None and mode not in ("ANY", "VALIDATED"):
        problems.append("allowed_function_names may only be set when mode is ANY or VALIDATED")
    for name in names or []:
        if name not in declared:
            problems.append(f"allowed_function_names: '{name}' is not a declared function")
    return problems


def generation_problems(config: Any) -> list[str]:
    if config is None:
        return []
    problems = unknown(config, GENERATION_FIELDS, "generation_config")
    stop = config.get("stopSequences")
    if stop is not None and (not isinstance(stop, list) or len(stop) > 5):
        problems.append("generation_config.stop_sequences: at most 5 stop sequences")
    mime_type = config.get("responseMimeType")
    if mime_type is not None and mime_type not in MIME_TYPES:
        problems.append(f"generation_config.response_mime_type: unsupported {mime_type}")
    if "responseSchema" in config:
        if mime_type != "application/json":
            problems.append("response_schema needs response_mime_type application/json")
        problems += schema_problems(config["responseSchema"], "generation_config.response_schema")
    return problems + json_schema_problems(config)


def json_schema_problems(config: dict[str, Any]) -> list[str]:
    """`responseJsonSchema` is plain JSON Schema (any keywords, `$ref` kept), taken only with
    JSON output and never beside `responseSchema` (the two are alternatives, C.2)."""
    if "responseJsonSchema" not in config:
        return []
    problems = []
    if not isinstance(config["responseJsonSchema"], dict):
        problems.append("generation_config.response_json_schema: must be a JSON object")
    if config.get("responseMimeType") != "application/json":
        problems.append("response_json_schema needs response_mime_type application/json")
    if "responseSchema" in config:
        problems.append("response_schema and response_json_schema cannot both be set")
    return problems
